import CNetsimReceive
import Foundation
import Histogram
import NetsimCore
import NetsimLoopback

/// The error of the relay's injected delay alone: no measuring thread's wake-up is in it.
///
/// One way, client → relay → receiver, 100 B every 50–100 ms (seeded gaps: the relay is idle
/// between them, as in a ping-pong). The send time is the clock read right after `send(2)`
/// returns — on loopback the bytes reach the relay's socket inside that call — and the arrival
/// time is the kernel's receive time at the receiver (`SO_TIMESTAMPNS`), however late the
/// receiving thread wakes. Error = arrival − send − delay: the relay's read, its release timer,
/// its write. A message whose arrival is less than the delay after the clock read *before* its
/// send was released early, whatever the sender's scheduling: counted, and the target is none.
/// `Fixtures/bench/delay_error.py` measures the same from outside, for A/B of two binaries.
enum StampedDelay {
    static let messageSize = 100
    /// Messages before the measured ones: the connection and the relay's timers warm up.
    static let warmUp = 5

    struct Measured {
        var errors: Histogram<UInt64>
        var early: Int
        var samples: Int
    }

    /// `samples` messages through the relay listening on `relayPort`, whose upstream is `polled`'s
    /// port and whose client → server direction delays `injected` ns.
    static func measure(through relayPort: Int, polled: PolledEcho, injected: Int64, samples: Int) throws -> Measured {
        let ends = try polled.connect(through: relayPort)
        defer {
            ends.client.close()
            ends.server.close()
        }
        guard cnetsim_receive_times_enable(ends.server.fd) == 0 else {
            throw RuntimeError("the kernel would not stamp received bytes (SO_TIMESTAMPNS): errno \(errno)")
        }
        var gaps = SeededRandom(seed: 13)
        var measured = Measured(errors: RoundTripBench.newHistogram(), early: 0, samples: samples)
        let message = [UInt8](repeating: 0x42, count: messageSize)
        for index in 0..<(warmUp + samples) {
            usleep(UInt32(50_000 + gaps.nextUnit() * 50_000))
            let before = monotonicNanoseconds()
            try ends.client.send(message)
            let after = monotonicNanoseconds()
            let arrived = try receiveStamped(ends.server, count: messageSize, patience: injected + 2_000_000_000)
            guard index >= warmUp else { continue }
            _ = measured.errors.record(UInt64(abs(arrived - after - injected)))
            if arrived - before < injected { measured.early += 1 }
        }
        return measured
    }

    /// Reads `count` bytes, waiting in poll(2); returns the kernel's receive time of the last of them.
    private static func receiveStamped(_ socket: BlockingSocket, count: Int, patience: Int64) throws -> Int64 {
        let deadline = monotonicNanoseconds() + patience
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        var got = 0
        var stamp: Int64 = -1
        while got < count {
            let left = deadline - monotonicNanoseconds()
            var ready = pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&ready, 1, Int32(left / 1_000_000) + 1) > 0 else {
                throw RuntimeError("the relay delivered \(got) of \(count) bytes within \(patience / 1_000_000) ms")
            }
            var arrived: Int64 = -1
            let read = cnetsim_receive_timed(socket.fd, buffer.baseAddress! + got, count - got, &arrived)
            if read == 0 { throw RuntimeError("the relay closed the receiver's connection") }
            if read < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                throw RuntimeError("recvmsg failed: errno \(errno)")
            }
            got += read
            if arrived >= 0 { stamp = arrived }
        }
        guard stamp >= 0 else { throw RuntimeError("the kernel gave no receive time for the relay's bytes") }
        return stamp
    }
}
