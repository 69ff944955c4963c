@testable import NetsimAccept
import Testing

/// The process's descriptor reserve is given back while any listener is paused for want of
/// descriptors and taken again when the last one resumes. (That the relay's table has room while
/// it waits is `RelayProcessTests.acceptsFailingForWantOfDescriptorsWaitASecond`, on a real one.)
@Suite("the descriptor reserve")
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
}
