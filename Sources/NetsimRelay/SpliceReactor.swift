import CNetsimSplice
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// Something the reactor wakes: told on its own event loop which of its descriptors are ready.
protocol SpliceReadinessTarget: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// On `eventLoop`: descriptor `slot` saw `events` (one-shot: re-arm to hear more).
    func ready(slot: Int, events: UInt32)
}

/// Watches the splice path's sockets for readiness on one thread of its own, and hands each
/// readiness to the connection's event loop, where the splicing happens.
///
/// Why a thread of its own: SwiftNIO owns the sockets' registration in its epoll and offers no
/// way to hear readability without reading. Why hand over instead of splicing here: NIO still
/// reads a socket by itself when the peer half-closes (it reads up to the EOF), so every
/// system call on a connection's sockets stays on its event loop, in order. Registrations are
/// one-shot (EPOLLONESHOT): a connection re-arms after it has done what it can, so a socket
/// is never reported twice for the same bytes. The descriptors registered are the path's own
/// duplicates, so a socket NIO closes meanwhile cannot be confused with a new one.
final class SpliceReactor: @unchecked Sendable {
    static let shared: SpliceReactor? = SpliceReactor()

    private let epoll: Int32
    private let lock = NIOLock()
    private var targets: [UInt64: (target: any SpliceReadinessTarget, slot: Int)] = [:]
    private var nextToken: UInt64 = 1

    private init?() {
        let epoll = netsim_epoll_create()
        guard epoll >= 0 else { return nil }
        self.epoll = epoll
        let thread = Thread { [self] in run() }
        thread.name = "netsim-splice-reactor"
        thread.start()
    }

    /// Registers `fd` (disarmed until ``arm(_:events:)``) and returns its token.
    func register(_ fd: Int32, target: any SpliceReadinessTarget, slot: Int) -> Result<UInt64, SpliceError> {
        let token = lock.withLock {
            defer { nextToken += 1 }
            targets[nextToken] = (target, slot)
            return nextToken
        }
        let result = netsim_epoll_arm(epoll, fd, 0, token, 1)
        guard result == 0 else {
            _ = lock.withLock { targets.removeValue(forKey: token) }
            return .failure(SpliceError(errno: -result, operation: "epoll_ctl"))
        }
        return .success(token)
    }

    /// Asks to hear once when `fd` is ready for `events` (NETSIM_EPOLLIN / NETSIM_EPOLLOUT).
    func arm(_ fd: Int32, token: UInt64, events: UInt32) {
        _ = netsim_epoll_arm(epoll, fd, events | UInt32(NETSIM_EPOLLRDHUP), token, 0)
    }

    /// Forgets `fd` (before the caller closes its duplicate).
    func unregister(_ fd: Int32, token: UInt64) {
        _ = netsim_epoll_remove(epoll, fd)
        _ = lock.withLock { targets.removeValue(forKey: token) }
    }

    private func run() {
        var data = [UInt64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        while true {
            let count = netsim_epoll_wait(epoll, &data, &events, 64, -1)
            guard count > 0 else { continue }
            for index in 0..<Int(count) {
                guard let (target, slot) = lock.withLock({ targets[data[index]] }) else { continue }
                let ready = events[index]
                target.eventLoop.execute { target.ready(slot: slot, events: ready) }
            }
        }
    }
}
