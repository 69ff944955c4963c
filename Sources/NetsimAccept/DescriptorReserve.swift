#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
import NIOCore

/// A few descriptors the process keeps open (on `/dev/null`) while it has descriptors to spare,
/// and gives back while a listener is paused because accept(2) found none (``AcceptBackoff``), so
/// the process never sits with its descriptor table full.
///
/// Why: on Linux, libdispatch watches its worker threads once a second by opening
/// `/proc/<tid>/stat` whenever a global queue has work waiting, and traps (SIGILL, with no message:
/// the backtracer has no descriptor either) when that open fails. Swift concurrency runs on those
/// queues, so a process whose table is full dies at any such second. A relay whose
/// `--max-connections` outgrew its open-file limit died so, about 1 s after its first failed accept.
/// With the reserve given back, the table has room for the runtime until the listener accepts again.
/// libuv and nginx keep a spare descriptor for a like reason: to have one when the table is full.
///
/// The reserve is the process's: the first listener to pause gives it back, the last to resume
/// takes it again (as much of it as it can open then). While it is given back, what would open a
/// socket waits (``openable(on:)``): a relay's upstream connects for connections accepted just
/// before the pause took the freed room at once under load, and the table was full again.
public enum DescriptorReserve {
    /// How many descriptors the reserve holds.
    public static let size = 8

    private struct State {
        var held: [Int32]
        var paused = 0
        /// What waits for the last paused listener to resume.
        var waiting: [@Sendable () -> Void] = []
    }

    private static let state = NIOLockedValueBox(State(held: openSpares(size)))

    /// The descriptors held now: ``size`` while no listener is paused (if the process could open
    /// them), none while one is.
    public static var held: Int { state.withLockedValue { $0.held.count } }

    /// Whether a listener is paused for want of descriptors, and the reserve given back.
    public static var isGivenBack: Bool { state.withLockedValue { $0.paused > 0 } }

    /// Opens the reserve if it is not open yet (the first use does); listeners call it when they
    /// are made, while the process has descriptors to spare.
    public static func prepare() { _ = held }

    /// A listener paused for want of descriptors: the first gives the reserve back.
    static func listenerPaused() {
        let spares = state.withLockedValue { state -> [Int32] in
            state.paused += 1
            defer { state.held = [] }
            return state.held
        }
        for descriptor in spares { close(descriptor) }
    }

    /// A paused listener is about to accept again: the last takes the reserve back first, so
    /// what its accepts take is not the runtime's room, then lets what waited open its sockets.
    static func listenerResuming() {
        let waiting = state.withLockedValue { state -> [@Sendable () -> Void] in
            state.paused = max(0, state.paused - 1)
            guard state.paused == 0 else { return [] }
            state.held += openSpares(size - state.held.count)
            defer { state.waiting = [] }
            return state.waiting
        }
        for body in waiting { body() }
    }

    /// Runs `body` now if no listener is paused for want of descriptors, else once the last one
    /// resumes (about a second later, after the reserve is taken back), on the caller's thread or
    /// the resuming listener's.
    static func whenOpenable(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLockedValue { state -> Bool in
            guard state.paused > 0 else { return true }
            state.waiting.append(body)
            return false
        }
        if now { body() }
    }

    /// Succeeds on `eventLoop` once a descriptor may be opened: at once if no listener is paused
    /// for want of them, else when the last resumes. Fails with `EMFILE` (as a full table would)
    /// if by the time it reaches `eventLoop` another pause has given the reserve back. Wait on it
    /// before opening a descriptor for work already under way: the room the reserve gave back is
    /// the runtime's.
    public static func openable(on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let promise = eventLoop.makePromise(of: Void.self)
        whenOpenable {
            if eventLoop.inEventLoop { return promise.succeed() }
            eventLoop.execute {
                if isGivenBack { promise.fail(IOError(errnoCode: EMFILE, reason: "socket")) } else { promise.succeed() }
            }
        }
        return promise.futureResult
    }

    private static func openSpares(_ count: Int) -> [Int32] {
        var spares: [Int32] = []
        for _ in 0..<max(0, count) {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { break }
            spares.append(descriptor)
        }
        return spares
    }
}
