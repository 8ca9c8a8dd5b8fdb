/// Which requests of a `{page}` walk to make ahead of the page being stored. The
/// read-ahead ramps up: one request at first, twice as many in flight each time a page
/// comes back full (as many entries as the first page, or `stop.short`), up to `width`; a
/// page that comes back short says the end may be near, and nothing past it is asked for
/// until the walk goes on past it, with one request again. So a walk of a page or two asks
/// for little past its end, and a long one soon has `width` requests in flight.
///
/// When a full page arrives, its slot is handed on at once, so that a slot does not wait
/// for the walk to store the pages before it. No more than the ramp's width are ever in
/// flight, and none starts `2·width` pages or more past the page being stored, so that the
/// responses waiting to be stored stay few. The last page a response announces
/// (`stop.last_page`, `stop.pages`), or the one the first page's `stop.total` leads to,
/// bounds the read-ahead at once. Only bookkeeping: the walker makes the requests.
struct PageWindow {
    package let width: Int
    package let step: Int
    /// Whether an arriving response starts requests. With one request at a time, the next
    /// starts only once the walk has seen this response: none is made past the end.
    let chained: Bool
    /// No request for a page value above this: `pages.to`, `--max-pages`.
    private let limit: Int
    /// Nor above the last page the latest response announced (`stop.last_page`).
    private var announced: Int?
    /// Nor above the last page the first page's `stop.total` leads to, its pages as full as it.
    private var estimated: Int?
    /// Nor above a page that came back short, until the walk goes on past it.
    private var ceiling: Int?
    /// The requests that may be in flight now: 1, doubled by each full page, up to `width`.
    private(set) var ramp = 1
    /// Entries of a full page: `stop.short`, or those of the first page that held any.
    private var fullPage: Int?
    /// Records walked before the first page (a resumed walk's), which `stop.total` counts.
    private let walked: Int
    /// Whether `stop.total` bounds the read-ahead.
    private let usesTotal: Bool
    /// The page the walk stores next.
    private var head: Int
    /// The highest page value the walk has taken: never asked for again by the window.
    private var taken: Int?
    /// Page values requested and not yet handed to the walk.
    private var open: Set<Int> = []
    /// Page values requested and not yet answered.
    private var inFlight: Set<Int> = []

    package init(width: Int, step: Int, head: Int, limit: Int, fullPage: Int? = nil, walked: Int = 0, usesTotal: Bool = false) {
        self.width = width
        self.step = step
        self.head = head
        self.limit = limit
        self.fullPage = fullPage
        self.walked = walked
        self.usesTotal = usesTotal
        chained = width > 1
    }

    /// The walk is about to store `page`: the pages to request now. Past a short page, the
    /// read-ahead starts again from one request.
    mutating func advance(to page: Int) -> [Int] {
        head = page
        if let ceiling, page > ceiling {
            self.ceiling = nil
            ramp = 1
        }
        return fill()
    }

    /// Whether `target` is to be requested: not requested or taken already, not past the
    /// limit, the announced or estimated last page, or a short page. A page to request is
    /// marked open and in flight.
    package mutating func claim(_ target: Int) -> Int? {
        guard !open.contains(target), target > (taken ?? .min), target <= limit, target <= (announced ?? .max),
              target <= (estimated ?? .max), target <= (ceiling ?? .max) else { return nil }
        open.insert(target)
        inFlight.insert(target)
        return target
    }

    /// The response for `page` arrived, with `elements` entries in its records array (nil
    /// for a response that is not a page): the requests to make now. A full page widens
    /// the ramp and hands its slot on; a short one starts nothing.
    package mutating func arrived(_ page: Int, elements: Int?, announcing last: Int?, total: Int? = nil) -> [Int] {
        inFlight.remove(page)
        if let last { announced = last }
        guard let elements else { return [] }
        if fullPage == nil, elements > 0 {
            fullPage = elements
            if usesTotal, let total { estimated = lastPage(total: total, from: page, perPage: elements) }
        }
        guard let fullPage, elements >= fullPage else {
            ceiling = max(ceiling ?? page, page)
            return []
        }
        ramp = min(ramp * 2, width)
        return chained ? fill() : []
    }

    /// The walk is storing `page` and goes on past it: the requests to make now. Past a
    /// short page, from one request again.
    mutating func fill(afterStoring page: Int) -> [Int] {
        if let ceiling, page >= ceiling {
            self.ceiling = nil
            ramp = 1
        }
        return fill()
    }

    /// The walk took the response for `page`.
    package mutating func take(_ page: Int) {
        open.remove(page)
        taken = max(taken ?? page, page)
    }

    package mutating func announce(_ last: Int) {
        announced = last
    }

    /// Requests from the head on, while fewer than the ramp's width are in flight, within
    /// `2·ramp` pages of the head.
    private mutating func fill() -> [Int] {
        var pages: [Int] = []
        var ahead = 0
        while inFlight.count < ramp, ahead < 2 * ramp {
            let (offset, overflow) = ahead.multipliedReportingOverflow(by: step)
            let (target, beyond) = head.addingReportingOverflow(offset)
            guard !overflow, !beyond, target <= limit else { break }
            if let page = claim(target) { pages.append(page) }
            ahead += 1
        }
        return pages
    }

    /// The page value at which `total` records end, pages of `perPage` from `first` on.
    private func lastPage(total: Int, from first: Int, perPage: Int) -> Int? {
        let left = max(total - walked, 1)
        let pages = (left + perPage - 1) / perPage
        let (span, overflow) = (pages - 1).multipliedReportingOverflow(by: step)
        let (last, beyond) = first.addingReportingOverflow(span)
        return overflow || beyond ? nil : last
    }
}
