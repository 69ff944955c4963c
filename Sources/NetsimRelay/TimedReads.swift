import CNetsimReceive
import Foundation
import NIOCore

/// One leg's reads with the time the kernel received their bytes.
///
/// Why: an injected delay counts from when bytes arrive. The event loop's own clock at read time
/// is late by its wake-up after idle — 105–108 µs at p50 and 159–187 µs at p99 on this project's
/// VM (`Fixtures/bench/wakeup_floor.py`), most of the 0.2 ms the delay's error may have. The
/// kernel stamps each segment as it is received (SO_TIMESTAMPNS), and recvmsg(2) hands the stamp
/// of the last segment it read up as a control message; SwiftNIO's stream channels read with
/// read(2), which drops it.
///
/// How, without a second reactor: NIO keeps the socket's readiness, EOF and reset handling, and
/// reads only the first byte of each readiness event (the channel's receive allocator is set to
/// one byte, one read per event); the leg's handler then reads the rest itself with recvmsg(2) on
/// the same event loop, in order, and gets the stamp of the segment that byte came in. A message
/// of one byte alone has no stamp left to read (the loop's time is used). The cost is one read
/// system call per readiness event, on delayed or shaped legs only.
///
/// Loop-confined, like the handler that owns it.
final class TimedReads {
    /// What one read gave.
    enum Outcome {
        /// Bytes were appended; the kernel's receive time of the last of them (nil: no stamp),
        /// and whether they filled the buffer (more may be waiting).
        case bytes(arrivedAt: Int64?, filled: Bool)
        case wouldBlock
        case endOfFile
        case failed(errno: CInt)
    }

    private let fd: CInt
    private var sizes = Relay.receiveAllocator

    private init(fd: CInt) { self.fd = fd }

    /// Starts timed reads on `channel`'s socket: from now on NIO reads one byte per readiness
    /// event. Nil — the leg keeps NIO's reads — when the channel is not a socket of this process
    /// that can be found (an embedded channel, another platform) or the kernel will not stamp it.
    static func start(on channel: any Channel) -> TimedReads? {
        channel.eventLoop.preconditionInEventLoop()
        guard let fd = descriptor(of: channel), cnetsim_receive_times_enable(fd) == 0 else { return nil }
        do {
            let options = channel.syncOptions
            // One read per event first: should the allocator then fail, the leg keeps NIO's reads whole.
            try options?.setOption(ChannelOptions.maxMessagesPerRead, value: 1)
            try options?.setOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 1))
            guard options != nil else { return nil }
        } catch {
            return nil
        }
        return TimedReads(fd: fd)
    }

    /// The descriptor under `channel`: NIO names it in the channel's description only, so it is
    /// read from there and accepted only if that descriptor's socket cookie is the channel's —
    /// a wrong or changed description can never make this read another socket.
    private static func descriptor(of channel: any Channel) -> CInt? {
        let text = String(describing: channel)
        guard let range = text.range(of: "fd=") else { return nil }
        let digits = text[range.upperBound...].prefix(while: \.isNumber)
        guard let fd = CInt(digits), fd >= 0,
              let options = channel as? any SocketOptionProvider, cnetsim_socket_cookie_option() >= 0
        else { return nil }
        var cookie: UInt64?
        // Answered at once on the channel's own loop.
        let asked: EventLoopFuture<UInt64> = options.unsafeGetSocketOption(
            level: .socket, name: NIOBSDSocket.Option(rawValue: cnetsim_socket_cookie_option()))
        asked.whenSuccess { cookie = $0 }
        guard let cookie, cookie != 0, cnetsim_socket_cookie(fd) == cookie else { return nil }
        return fd
    }

    /// A buffer NIO filled past its one byte: see ``buffer(startingWith:allocator:)``.
    private var pooled: ByteBuffer?

    /// A buffer sized as NIO's adaptive allocator would, holding `first` (NIO's read) at its start.
    ///
    /// NIO reads into a buffer of its receive pool again once nothing else holds it, whatever the
    /// allocator now says — so on a leg whose timed reads began mid-connection (its link became
    /// delayed) NIO goes on filling its old, large buffer. Holding that buffer here keeps NIO
    /// from reusing it: from its next readiness event it reads one byte as set. (Until then those
    /// bytes are timed from the read.) At most one such buffer per leg, freed with the leg.
    func buffer(startingWith first: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        if first.readableBytes > 1 { pooled = first }
        var buffer = sizes.buffer(allocator: allocator)
        var first = first
        buffer.writeBuffer(&first)
        return buffer
    }

    /// One non-blocking read appended to `buffer`.
    func read(into buffer: inout ByteBuffer) -> Outcome {
        var arrived: Int64 = -1
        var failure: CInt = 0
        while true {
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { space in
                guard space.count > 0 else { return 0 }
                let got = cnetsim_receive_timed(fd, space.baseAddress, space.count, &arrived)
                if got < 0 { failure = errno }
                return max(0, got)
            }
            if count > 0 {
                _ = sizes.record(actualReadBytes: buffer.readableBytes)
                return .bytes(arrivedAt: arrived >= 0 ? arrived : nil, filled: buffer.writableBytes == 0)
            }
            switch failure {
            case 0: return buffer.writableBytes == 0 ? .bytes(arrivedAt: nil, filled: true) : .endOfFile
            case EINTR: failure = 0
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno: failure)
            }
        }
    }
}
