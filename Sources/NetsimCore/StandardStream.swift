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

    public var descriptor: Int32 { self == .output ? STDOUT_FILENO : STDERR_FILENO }

    /// The stream `path` names when both are one open file: `/dev/stdout` (or the file itself)
    /// with standard output redirected to a regular file. Opened again, the path gets an offset
    /// of its own, from 0, and its writes and the stream's overwrote each other (`netsim run
    /// --json /dev/stdout > out` left neither whole); written through the stream, they follow
    /// each other. Nil when `path` is another file, or names nothing yet.
    public static func same(as path: String) -> StandardStream? {
        var file = stat()
        guard stat(path, &file) == 0 else { return nil }
        return [StandardStream.output, .error].first { stream in
            var open = stat()
            return fstat(stream.descriptor, &open) == 0 && open.st_dev == file.st_dev && open.st_ino == file.st_ino
        }
    }

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
