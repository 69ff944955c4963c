import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// netsim's own standard output and error, written with write(2). `FileHandle.write(_:)` traps
/// on any error: `netsim run … | head -3` crashed ("Broken pipe", then a backtrace) once `head`
/// had its lines, and so did a run whose output was closed. A stream that fails is dropped: the
/// run goes on (its reports and exit status still count), quietly, as `netsim test | head` did.
public enum StandardStream: Sendable {
    case output, error

    private static let broken = LockedBox<Set<Int32>>([])

    var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// Writes `text` whole (short writes and interruptions retried); nothing once the stream failed.
    public func write(_ text: String) { write(bytes: Array(text.utf8)) }

    /// ``write(_:)`` for bytes.
    public func write(bytes whole: [UInt8]) {
        let fd = descriptor
        guard !Self.broken.withLock({ $0.contains(fd) }) else { return }
        var bytes = whole[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress, $0.count) }
            if written > 0 { bytes = bytes.dropFirst(written); continue }
            if written < 0 && errno == EINTR { continue }
            Self.broken.withLock { _ = $0.insert(fd) }
            return
        }
    }
}

/// write(2), named apart from ``StandardStream/write(_:)``.
private func systemWrite(_ fd: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, bytes, count) }
