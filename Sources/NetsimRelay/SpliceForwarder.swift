import CNetsimSplice
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
import NIOCore
import NetsimCore

/// The splice path of one connection: each direction moves bytes socket → pipe → socket with
/// splice(2), never copying them into userspace.
///
/// It works on duplicates of the two legs' descriptors (so a registration can never outlive its
/// socket's identity) and only on its event loop. A direction splices from its source into its
/// pipe only when the pipe is empty, so EAGAIN from that call always means "the source has
/// nothing" and EAGAIN from the drain always means "the destination is full"; with one pipe of
/// at most ``SplicePipePool/pipeSize`` bytes per direction, a connection on this path holds a
/// bounded amount, whatever its peers do. FIN and RST are not its business: SwiftNIO still
/// hears them on the same sockets and the connection's machine forwards them, after the pipe
/// has drained (the pair holds whatever goes to a destination whose pipe still has bytes).
final class SpliceForwarder: SpliceReadinessTarget, @unchecked Sendable {
    /// What one pass moved, and whether the kernel refused splicing altogether.
    struct Pass {
        var moved = [0, 0]
        var refused: SpliceError?
        /// A source failed (ECONNRESET): the splice took the socket's error, so NIO will not see it.
        var failed: [(leg: Leg, errno: Int32)] = []
    }

    private struct Direction {
        let pipe: SplicePipe
        var inPipe = 0
        var sourceEnded = false
        /// The destination failed (EPIPE, ECONNRESET): NIO hears that too and ends the connection.
        var broken = false
    }

    let eventLoop: any EventLoop
    private let reactor: SpliceReactor
    /// Slot 0 is the client leg, slot 1 the upstream leg; direction 0 is client → upstream.
    private let fds: [Int32]
    private var tokens: [UInt64] = []
    private var directions: [Direction]
    /// Cleared while the connection leaves for the copy path: the pipes drain, nothing new comes in.
    var reading = true
    /// Per direction, NIO writes not yet on the socket: the direction waits until none is left,
    /// as they came ahead of anything it would read now (NIO can still read after the switch:
    /// a read it had already asked for, or up to the EOF). A count, not a flag: NIO may be given
    /// several writes before the first completes, and a flag cleared by the first would let
    /// spliced bytes overtake the rest.
    private var pendingWrites = [0, 0]
    /// Directions that drain their pipe but read nothing new: bytes NIO read are waiting behind
    /// the pipe (held by the pair) and must go out before anything read after them.
    private var drainOnly = [false, false]
    private var wants: [UInt32] = [0, 0]
    private var closed = false
    /// Told on the loop after each pass driven by readiness.
    private let onReady: (Pass) -> Void
    /// Forwarders started and not yet closed, process-wide (tests check none outlives its connection).
    private static let open = NIOLockedValueBox(0)
    static var openCount: Int { open.withLockedValue { $0 } }
    /// Bytes one pass moves per direction before yielding the loop to other connections.
    static let passBudget = 4 << 20

    private init(eventLoop: any EventLoop, reactor: SpliceReactor, fds: [Int32], pipes: [SplicePipe], onReady: @escaping (Pass) -> Void) {
        self.eventLoop = eventLoop
        self.reactor = reactor
        self.fds = fds
        self.directions = pipes.map { Direction(pipe: $0) }
        self.onReady = onReady
    }

    /// Starts on duplicates of `client` and `upstream` (the legs' own descriptors, borrowed).
    static func start(on eventLoop: any EventLoop, client: Int32, upstream: Int32,
                      onReady: @escaping (Pass) -> Void) -> Result<SpliceForwarder, SpliceError> {
        guard let reactor = SpliceReactor.shared else { return .failure(SpliceError(errno: ENOSYS, operation: "epoll")) }
        var fds: [Int32] = []
        var pipes: [SplicePipe] = []
        func undo() {
            fds.forEach(netsim_close)
            pipes.forEach { SplicePipePool.shared.give($0, empty: true) }
        }
        for fd in [client, upstream] {
            let copy = netsim_dup(fd)
            guard copy >= 0 else {
                undo()
                return .failure(SpliceError(errno: -copy, operation: "dup"))
            }
            fds.append(copy)
        }
        for _ in 0..<2 {
            switch SplicePipePool.shared.take() {
            case .success(let pipe): pipes.append(pipe)
            case .failure(let error):
                undo()
                return .failure(error)
            }
        }
        let forwarder = SpliceForwarder(eventLoop: eventLoop, reactor: reactor, fds: fds, pipes: pipes, onReady: onReady)
        open.withLockedValue { $0 += 1 }
        for (slot, fd) in fds.enumerated() {
            switch reactor.register(fd, target: forwarder, slot: slot) {
            case .success(let token): forwarder.tokens.append(token)
            case .failure(let error):
                forwarder.close()
                return .failure(error)
            }
        }
        return .success(forwarder)
    }

    /// Stops the direction toward `leg` until a matching ``resume(toward:)``: NIO is writing to it.
    func pause(toward leg: Leg) { pendingWrites[leg == .upstream ? 0 : 1] += 1 }
    func resume(toward leg: Leg) { pendingWrites[leg == .upstream ? 0 : 1] -= 1 }
    func setDrainOnly(toward leg: Leg, _ on: Bool) { drainOnly[leg == .upstream ? 0 : 1] = on }

    /// Whether bytes bound for `leg` are still in a pipe.
    func hasBytes(toward leg: Leg) -> Bool {
        let direction = directions[leg == .upstream ? 0 : 1]
        return direction.inPipe > 0 && !direction.broken
    }

    /// No pipe holds bytes that can still be delivered.
    var isDrained: Bool { directions.allSatisfy { $0.inPipe == 0 || $0.broken } }

    func ready(slot: Int, events: UInt32) {
        // A socket in error or hung up fails its next splice, so it is not armed again (NIO closes it).
        guard !closed else { return }
        onReady(pump())
    }

    /// Moves what can move now in both directions and re-arms for what it waits on.
    func pump() -> Pass {
        var pass = Pass()
        guard !closed else { return pass }
        wants = [0, 0]
        for index in 0..<2 { pump(index, into: &pass) }
        for slot in 0..<2 where wants[slot] != 0 { reactor.arm(fds[slot], token: tokens[slot], events: wants[slot]) }
        return pass
    }

    private func pump(_ index: Int, into pass: inout Pass) {
        let source = index, destination = 1 - index
        var direction = directions[index]
        defer { directions[index] = direction }
        while !direction.broken, pendingWrites[index] == 0 {
            if direction.inPipe > 0 {
                let result = netsim_splice(direction.pipe.readEnd, fds[destination], direction.inPipe)
                if result > 0 {
                    direction.inPipe -= result
                    pass.moved[index] += result
                    continue
                }
                if result == -Int(EAGAIN) {
                    wants[destination] |= UInt32(NETSIM_EPOLLOUT)
                } else if Self.isRefusal(result) {
                    pass.refused = SpliceError(errno: Int32(truncatingIfNeeded: -result), operation: "splice")
                } else {
                    direction.broken = true
                }
                return
            }
            guard reading, !drainOnly[index], !direction.sourceEnded, pass.refused == nil else { return }
            if pass.moved[index] >= Self.passBudget {
                // Yield: still readable, so the one-shot registration reports it again at once.
                wants[source] |= UInt32(NETSIM_EPOLLIN)
                return
            }
            let result = netsim_splice(fds[source], direction.pipe.writeEnd, direction.pipe.capacity)
            if result > 0 {
                direction.inPipe = result
            } else if result == 0 {
                // EOF: NIO hears it too and the machine forwards the FIN once this pipe is empty.
                direction.sourceEnded = true
                return
            } else if result == -Int(EAGAIN) {
                wants[source] |= UInt32(NETSIM_EPOLLIN)
                return
            } else if Self.isRefusal(result) {
                pass.refused = SpliceError(errno: Int32(truncatingIfNeeded: -result), operation: "splice")
                return
            } else {
                // ECONNRESET and the like: reading took the socket's error, so the pair must
                // report it (NIO's own read would now see only an EOF).
                direction.sourceEnded = true
                pass.failed.append((index == 0 ? .client : .upstream, Int32(truncatingIfNeeded: -result)))
                return
            }
        }
    }

    /// splice(2) refused for these descriptors: the connection copies instead.
    private static func isRefusal(_ result: Int) -> Bool { result == -Int(EINVAL) || result == -Int(ENOSYS) }

    /// Unregisters, closes the duplicates and hands the pipes back (closed if they hold bytes).
    func close() {
        guard !closed else { return }
        closed = true
        Self.open.withLockedValue { $0 -= 1 }
        for (slot, token) in tokens.enumerated() { reactor.unregister(fds[slot], token: token) }
        fds.forEach(netsim_close)
        for direction in directions { SplicePipePool.shared.give(direction.pipe, empty: direction.inPipe == 0) }
    }
}
