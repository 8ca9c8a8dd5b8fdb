import Foundation
import Logging
import MirrorModel
import Synchronization

/// On a terminal, a live line per running job at the bottom of stderr; log lines scroll
/// above them. A job's last line stays when it ends.
final class TerminalProgress: Sendable {
    private struct State {
        var order: [String] = []
        var lines: [String: String] = [:]
        /// Lines of the live block now on screen.
        var drawn = 0
        var lastDraw: ContinuousClock.Instant?
    }

    private let state = Mutex(State())

    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    func update(_ progress: JobProgress) {
        state.withLock { state in
            if state.lines[progress.job] == nil { state.order.append(progress.job) }
            state.lines[progress.job] = progress.text
            let now = ContinuousClock.now
            if progress.ending == nil {
                // Redraw at most ten times a second.
                if let last = state.lastDraw, now - last < .milliseconds(100) { return }
                state.lastDraw = now
                Self.redraw(&state, above: [])
            } else {
                state.order.removeAll { $0 == progress.job }
                state.lines[progress.job] = nil
                Self.redraw(&state, above: [progress.text])
            }
        }
    }

    /// Prints a log line above the live block.
    func log(_ line: String) {
        state.withLock { Self.redraw(&$0, above: [line]) }
    }

    /// Removes the live block (before the summary is printed).
    func finish() {
        state.withLock { state in
            state.order = []
            Self.redraw(&state, above: [])
        }
    }

    private static func redraw(_ state: inout State, above: [String]) {
        var text = ""
        if state.drawn > 0 {
            // To the start of the block's first line, then erase to the end of the screen.
            text += "\u{1B}[\(state.drawn)F\u{1B}[J"
        }
        for line in above { text += line + "\n" }
        let width = max(20, terminalWidth() - 1)
        for job in state.order {
            let line = state.lines[job] ?? job
            // A wrapped line would throw the next redraw's line count off.
            text += String(line.prefix(width)) + "\n"
        }
        state.drawn = state.order.count
        FileHandle.standardError.write(Data(text.utf8))
    }

    private static func terminalWidth() -> Int {
        var size = winsize()
        guard ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }
}

/// Sends log lines through the live display so they never tear its lines.
struct TerminalLogHandler: LogHandler {
    let label: String
    let display: TerminalProgress
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        let fields = merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        display.log("\(event.level): \(event.message)" + (fields.isEmpty ? "" : " " + fields))
    }
}
