/// Which requests of a `{page}` walk to make ahead of the page being stored. When a
/// response arrives, the request `width` pages further on starts at once, so that a slot
/// does not wait for the walk to store the pages before it. A request for page `p` starts
/// only once the one for `p - width·step` has ended, so no more than `width` are ever in
/// flight; and none starts `2·width` pages or more past the page being stored, so that the
/// responses waiting to be stored stay few. Only bookkeeping: the walker makes the requests.
struct PageWindow {
    package let width: Int
    package let step: Int
    /// Whether an arriving response starts the request `width` pages on. With one request
    /// at a time, the next starts only once the walk has seen this response: none is made
    /// past the end.
    let chained: Bool
    /// No request for a page value above this: `pages.to`, `--max-pages`.
    private let limit: Int
    /// Nor above the last page the latest response announced (`stop.last_page`).
    private var announced: Int?
    /// The page the walk stores next.
    private var head: Int
    /// Page values requested and not yet handed to the walk.
    private var open: Set<Int> = []

    package init(width: Int, step: Int, head: Int, limit: Int) {
        self.width = width
        self.step = step
        self.head = head
        self.limit = limit
        chained = width > 1
    }

    /// The walk is about to store `page`: the pages to request now, up to `width` from it.
    mutating func advance(to page: Int) -> [Int] {
        head = page
        return (0..<width).compactMap { ahead in
            let (offset, overflow) = ahead.multipliedReportingOverflow(by: step)
            let (target, beyond) = page.addingReportingOverflow(offset)
            return overflow || beyond ? nil : claim(target)
        }
    }

    /// Whether `target` is to be requested: not requested already, not past the limit or
    /// the announced last page. A page to request is marked open.
    package mutating func claim(_ target: Int) -> Int? {
        guard !open.contains(target), target <= limit, target <= (announced ?? .max) else { return nil }
        open.insert(target)
        return target
    }

    /// The response for `page` arrived: the request `width` pages further on, if it is
    /// to be made now (within `2·width` pages of the page being stored).
    package mutating func arrived(_ page: Int, announcing last: Int?) -> Int? {
        if let last { announced = last }
        guard chained else { return nil }
        return successor(of: page).flatMap { claim($0) }
    }

    /// The walk is storing `page`: the request `width` pages on.
    mutating func successor(afterStoring page: Int) -> Int? {
        let (span, spanOverflow) = width.multipliedReportingOverflow(by: step)
        let (target, targetOverflow) = page.addingReportingOverflow(span)
        return spanOverflow || targetOverflow ? nil : claim(target)
    }

    /// The walk took the response for `page`.
    package mutating func take(_ page: Int) {
        open.remove(page)
    }

    package mutating func announce(_ last: Int) {
        announced = last
    }

    private func successor(of page: Int) -> Int? {
        let (span, spanOverflow) = width.multipliedReportingOverflow(by: step)
        let (target, targetOverflow) = page.addingReportingOverflow(span)
        guard !spanOverflow, !targetOverflow else { return nil }
        let (distance, overflow) = target.subtractingReportingOverflow(head)
        return !overflow && distance / 2 < span ? target : nil
    }
}
