import CNetsimReceive
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// One leg's reads done by the relay itself, with recvmsg(2), so that each comes with the time
/// the kernel received its bytes.
///
/// Why: an injected delay counts from when bytes arrive. The event loop's own clock at read time
/// is late by its wake-up after idle — 105–108 µs at p50 and 159–187 µs at p99 on this project's
/// VM (`Fixtures/bench/wakeup_floor.py`), most of the 0.2 ms the delay's error may have. The
/// kernel stamps each segment as it is received (SO_TIMESTAMPNS); counting from that stamp takes
/// the read's lateness out of the delay. SwiftNIO's stream channels read with read(2) and hand
/// no control messages up, so the leg's handler stops forwarding NIO's reads and this reads
/// instead — on the channel's event loop, so NIO's own reads (it still reads at EOF and reset)
/// and these never interleave out of order. Readiness comes from ``ReadinessWatcher``'s thread.
///
/// The peer's FIN, a reset or a failure go back to NIO (``LegHandler`` hands over): NIO reads
/// what is left and reports the end as it always does.
///
/// Loop-confined (`@unchecked Sendable` through its handler).
final class TimedReads {
    /// What one read gave.
    enum Outcome {
        /// Bytes, the kernel's receive time of the last of them (nil: no stamp), and whether they
        /// filled the buffer (more may be waiting).
        case bytes(ByteBuffer, arrivedAt: Int64?, filled: Bool)
        case wouldBlock
        case endOfFile
        case failed(errno: CInt)
    }

    private let fd: CInt
    private let watcher: ReadinessWatcher
    private let token: UInt64
    private var registered = false
    /// Armed in the watcher: one readiness event will come.
    private(set) var armed = false
    private var sizes = Relay.receiveAllocator

    private init(fd: CInt, watcher: ReadinessWatcher, token: UInt64) {
        self.fd = fd
        self.watcher = watcher
        self.token = token
    }

    /// Starts timed reads on `channel`'s socket; `onEvent` gets each readiness event's mask on
    /// the channel's event loop. Nil — the leg stays with NIO's reads — when the channel is not
    /// a socket of this process that can be found (an embedded channel, another platform) or the
    /// kernel will not stamp it.
    static func start(on channel: any Channel, onEvent: @escaping (UInt32) -> Void) -> TimedReads? {
        channel.eventLoop.preconditionInEventLoop()
        guard let watcher = ReadinessWatcher.shared, let fd = descriptor(of: channel),
              cnetsim_receive_times_enable(fd) == 0
        else { return nil }
        let loop = channel.eventLoop
        let box = NIOLoopBound(onEvent, eventLoop: loop)
        let token = watcher.subscribe { events in loop.execute { box.value(events) } }
        return TimedReads(fd: fd, watcher: watcher, token: token)
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

    /// Asks for one readiness event (nothing if one is already asked for).
    func arm() {
        guard !armed else { return }
        if cnetsim_epoll_arm(watcher.epoll, fd, token, registered ? 0 : 1) == 0 {
            registered = true
            armed = true
        }
    }

    /// The watcher delivered the event this was armed for.
    func fired() { armed = false }

    /// One non-blocking read into a buffer sized as NIO's adaptive allocator would.
    func read(allocator: ByteBufferAllocator) -> Outcome {
        var buffer = sizes.buffer(allocator: allocator)
        var arrived: Int64 = -1
        var failure: CInt = 0
        while true {
            let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 0) { space in
                let got = cnetsim_receive_timed(fd, space.baseAddress, space.count, &arrived)
                if got < 0 { failure = errno }
                return max(0, got)
            }
            if count > 0 {
                let filled = buffer.writableBytes == 0
                _ = sizes.record(actualReadBytes: count)
                return .bytes(buffer, arrivedAt: arrived >= 0 ? arrived : nil, filled: filled)
            }
            switch failure {
            case 0: return .endOfFile
            case EINTR: failure = 0
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed(errno: failure)
            }
        }
    }

    /// Stops: nothing more will be read or delivered. `socketOpen`: the channel has not closed
    /// its descriptor yet, so it may still be taken out of the watcher's set (once closed, the
    /// kernel has already taken it out, and its number may belong to another socket).
    func stop(socketOpen: Bool) {
        if socketOpen, registered { _ = cnetsim_epoll_remove(watcher.epoll, fd) }
        registered = false
        armed = false
        watcher.unsubscribe(token)
    }
}

/// The one thread that waits for timed legs' sockets to become readable (EPOLLONESHOT: a leg is
/// woken once per ``TimedReads/arm()``) and passes each event to its leg's event loop. It blocks
/// in epoll_wait(2) while nothing arrives: an idle relay stays idle.
final class ReadinessWatcher: @unchecked Sendable {
    /// Nil where epoll is not available: legs keep NIO's reads.
    static let shared: ReadinessWatcher? = ReadinessWatcher()

    let epoll: CInt
    private let lock = NIOLock()
    private var subscribers: [UInt64: @Sendable (UInt32) -> Void] = [:]
    private var nextToken: UInt64 = 1

    private init?() {
        epoll = cnetsim_epoll_create()
        guard epoll >= 0 else { return nil }
        let thread = Thread { [self] in waitForever() }
        thread.name = "netsim-timed-reads"
        thread.start()
    }

    func subscribe(_ deliver: @escaping @Sendable (UInt32) -> Void) -> UInt64 {
        lock.withLock {
            let token = nextToken
            nextToken += 1
            subscribers[token] = deliver
            return token
        }
    }

    func unsubscribe(_ token: UInt64) {
        _ = lock.withLock { subscribers.removeValue(forKey: token) }
    }

    private func waitForever() {
        let capacity = 64
        var tokens = [UInt64](repeating: 0, count: capacity)
        var events = [UInt32](repeating: 0, count: capacity)
        while true {
            let count = cnetsim_epoll_wait(epoll, &tokens, &events, CInt(capacity))
            guard count > 0 else { continue }  // EINTR
            for index in 0..<Int(count) {
                // A token already unsubscribed is a leg that stopped: its event is dropped.
                if let deliver = lock.withLock({ subscribers[tokens[index]] }) { deliver(events[index]) }
            }
        }
    }
}
