#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers

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
/// takes it again (as much of it as it can open then).
public enum DescriptorReserve {
    /// How many descriptors the reserve holds.
    public static let size = 8

    private struct State {
        var held: [Int32]
        var paused = 0
    }

    private static let state = NIOLockedValueBox(State(held: openSpares(size)))

    /// The descriptors held now: ``size`` while no listener is paused (if the process could open
    /// them), none while one is.
    public static var held: Int { state.withLockedValue { $0.held.count } }

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
    /// what its accepts take is not the runtime's room.
    static func listenerResuming() {
        state.withLockedValue { state in
            state.paused = max(0, state.paused - 1)
            if state.paused == 0 { state.held += openSpares(size - state.held.count) }
        }
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
