@testable import NetsimAccept
import Dispatch
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import Testing

/// The process's descriptor reserve is given back while any listener is paused for want of
/// descriptors and taken again when the last one resumes. (That the relay's table has room while
/// it waits is `RelayProcessTests.acceptsFailingForWantOfDescriptorsWaitASecond`, on a real one.)
@Suite("the descriptor reserve", .serialized)
struct DescriptorReserveTests {
    @Test func givenBackWhileAnyListenerIsPausedTakenAgainAfterTheLast() {
        DescriptorReserve.prepare()
        #expect(DescriptorReserve.held == DescriptorReserve.size)
        DescriptorReserve.listenerPaused()
        #expect(DescriptorReserve.held == 0)
        DescriptorReserve.listenerPaused()
        DescriptorReserve.listenerResuming()
        #expect(DescriptorReserve.held == 0, "one listener is still paused")
        DescriptorReserve.listenerResuming()
        #expect(DescriptorReserve.held == DescriptorReserve.size)
    }

    /// What would open a descriptor while the reserve is given back waits for the last listener
    /// to resume, and runs after the reserve is taken again: a relay's upstream connects, run at
    /// once, took the room back under load (CI: 48 of 48 open during both pauses).
    @Test func whatWouldOpenADescriptorWaitsUntilTheReserveIsTakenAgain() {
        DescriptorReserve.prepare()
        let ran = NIOLockedValueBox<[Int]>([])
        DescriptorReserve.whenOpenable { ran.withLockedValue { $0.append(DescriptorReserve.held) } }
        #expect(ran.withLockedValue { $0 } == [DescriptorReserve.size], "not paused: at once")
        DescriptorReserve.listenerPaused()
        #expect(DescriptorReserve.isGivenBack)
        DescriptorReserve.whenOpenable { ran.withLockedValue { $0.append(DescriptorReserve.held) } }
        DescriptorReserve.whenOpenable { ran.withLockedValue { $0.append(DescriptorReserve.held) } }
        #expect(ran.withLockedValue { $0.count } == 1, "waits while paused")
        DescriptorReserve.listenerResuming()
        #expect(!DescriptorReserve.isGivenBack)
        #expect(ran.withLockedValue { $0 } == Array(repeating: DescriptorReserve.size, count: 3), "both ran, after the reserve was taken")
    }

    /// One that waited, but reaches its event loop after another pause gave the reserve back
    /// (the listener's accepts filled the table again), fails as a full table would.
    @Test func aWaitThatMeetsAnotherPauseFailsAsAFullTableWould() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        DescriptorReserve.listenerPaused()
        let waited = DescriptorReserve.openable(on: loop)
        let busy = DispatchSemaphore(value: 0)
        loop.execute { busy.wait() }  // the loop is busy while the listener resumes and pauses again
        DescriptorReserve.listenerResuming()
        DescriptorReserve.listenerPaused()
        busy.signal()
        #expect { try waited.wait() } throws: { ($0 as? IOError)?.errnoCode == EMFILE }
        DescriptorReserve.listenerResuming()
        try DescriptorReserve.openable(on: loop).wait()  // not paused: at once
    }

    /// A listener closed while it waits (a relay stopped within the second) gives up its pause:
    /// before, its resume never ran once its loop was gone, and the reserve stayed given back for
    /// the process, so every later upstream connect in it waited for good.
    @Test func aListenerRemovedWhileItWaitsEndsItsPause() throws {
        DescriptorReserve.prepare()
        let listener = EmbeddedChannel(handler: AcceptBackoff())
        listener.pipeline.fireErrorCaught(IOError(errnoCode: EMFILE, reason: "accept"))
        #expect(DescriptorReserve.isGivenBack)
        #expect(throws: IOError.self) { try listener.throwIfErrorCaught() }  // passed on, as NIO's accept error
        _ = try listener.finish()
        #expect(!DescriptorReserve.isGivenBack, "the removed listener still holds the reserve given back")
        #expect(DescriptorReserve.held == DescriptorReserve.size)
    }
}
