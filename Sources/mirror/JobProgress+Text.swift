import MirrorModel

/// The progress line a terminal shows for each job while it runs.
extension JobProgress {
    /// One line: `events: page 37/100, 3700 records (120 new), 2 not modified, 3.1 MB`.
    var text: String {
        var parts: [String] = []
        if let page {
            parts.append(lastPage.map { "page \(page)/\($0)" } ?? "page \(page)")
        } else {
            parts.append("starting")
        }
        let counts = walk.counts
        parts.append("\(counts.new + counts.updated + counts.unchanged) records (\(counts.new) new)")
        if walk.pagesNotModified > 0 { parts.append("\(walk.pagesNotModified) not modified") }
        if walk.pagesSkipped > 0 { parts.append("\(walk.pagesSkipped) skipped") }
        if walk.retries > 0 { parts.append("\(walk.retries) \(walk.retries == 1 ? "retry" : "retries")") }
        parts.append(ByteSize.approximate(walk.bytes))
        if let files {
            var text = "\(files.downloaded) \(files.downloaded == 1 ? "file" : "files") (\(ByteSize.approximate(files.bytes)))"
            if !files.failed.isEmpty { text += ", \(files.failed.count) failed" }
            parts.append(text)
        }
        switch ending {
        case nil: break
        case .complete, .incomplete: parts.append("done")
        case .failed: parts.append("FAILED")
        case .interrupted: parts.append("INTERRUPTED")
        case .deferred: parts.append("DEFERRED")
        }
        return "\(job): " + parts.joined(separator: ", ")
    }
}
