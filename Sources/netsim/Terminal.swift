import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Status lines go to standard error so standard output stays clean for `--events -`.
func printStatus(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

/// A warning nobody can miss: framed, and in bold red on a terminal.
func warnLoudly(_ message: String) {
    let tty = isatty(STDERR_FILENO) == 1
    let bar = String(repeating: "!", count: 78)
    let body = "\(bar)\nWARNING: \(message)\n\(bar)"
    printStatus(tty ? "\u{1B}[1;31m\(body)\u{1B}[0m" : body)
}

/// An error at run time (not a usage error): printed as `Error: …`, exit code 1.
struct RuntimeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Waits for SIGINT or SIGTERM, or until `duration` has passed.
func waitForStop(duration: Duration?) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let once = ResumeOnce(continuation)
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { once.resume() }
            source.resume()
            sources.append(source)
        }
        once.keep(sources)
        if let duration {
            DispatchQueue.global().asyncAfter(deadline: .now() + duration.seconds) { once.resume() }
        }
    }
}

/// Resumes a continuation exactly once, whichever stop condition comes first.
private final class ResumeOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var sources: [DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Void, Never>) { self.continuation = continuation }

    func keep(_ sources: [DispatchSourceSignal]) { lock.withLock { self.sources = sources } }

    func resume() {
        let c = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            defer { continuation = nil }
            return continuation
        }
        c?.resume()
    }
}
