import Foundation
import Synchronization
import Testing
@testable import netsim

/// Signals reach netsim's handlers through a pipe (``SignalPipe``), whichever thread the kernel
/// hands them to. SIGUSR1 and SIGUSR2 stand in for SIGINT and SIGTERM: nothing else in the test
/// process uses them, and a handler that was not installed would kill the process (their
/// default action), which fails the run loudly.
@Suite("signals through a pipe", .serialized)
struct SignalPipeTests {
    /// Polls `condition` every millisecond until it holds or 10 s have passed (a signal's
    /// handler runs on another thread; the deadline only bounds a failing run).
    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    /// Every process-directed signal sent from a busy thread arrives: each is awaited before the
    /// next (signals of one kind pending together merge into one, by POSIX).
    @Test func everySignalSentToTheProcessReachesTheHandler() async throws {
        let received = Mutex<[Int32]>([])
        let pipe = try #require(SignalPipe(signals: [SIGUSR1]) { sig in received.withLock { $0.append(sig) } })
        for round in 1...20 {
            let sender = Thread { kill(getpid(), SIGUSR1) }
            sender.start()
            try await Self.waitUntil { received.withLock { $0.count } >= round }
            #expect(received.withLock { $0.count } == round, "signal \(round) was not delivered")
        }
        #expect(received.withLock { $0 }.allSatisfy { $0 == SIGUSR1 })
        withExtendedLifetime(pipe) {}
    }

    /// The pipe's reading thread takes its signals even when the thread that made the pipe
    /// blocks them (Dispatch's and the cooperative pool's threads block nearly all, and a new
    /// thread inherits its maker's mask): in `netsim run` every other thread but libdispatch's
    /// parked main thread blocked SIGINT, and a CI run once ignored its Ctrl-C.
    @Test func theReadingThreadTakesItsSignalsWhateverItsMakerBlocks() async throws {
        let before = Set(Self.threads(named: "netsim signals"))
        let made = Mutex<SignalPipe?>(nil)
        let maker = Thread {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGUSR1)
            pthread_sigmask(SIG_BLOCK, &set, nil)
            made.withLock { $0 = SignalPipe(signals: [SIGUSR1]) { _ in } }
        }
        maker.start()
        var reader: Int?
        try await Self.waitUntil {
            reader = Self.threads(named: "netsim signals").first { !before.contains($0) }
            return reader != nil
        }
        let tid = try #require(reader, "no new thread named \"netsim signals\"")
        let status = try String(contentsOfFile: "/proc/self/task/\(tid)/status", encoding: .utf8)
        let blocked = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }?.split(separator: "\t").last)
        let mask = try #require(UInt64(blocked, radix: 16))
        #expect(mask & (1 << UInt64(SIGUSR1 - 1)) == 0, "the reader blocks SIGUSR1 (SigBlk \(blocked))")
        withExtendedLifetime(made) {}
    }

    /// The ids of this process's threads called `name`.
    static func threads(named name: String) -> [Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { tid in
            let comm = (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8)) ?? ""
            return comm.trimmingCharacters(in: .whitespacesAndNewlines) == name ? Int(tid) : nil
        }
    }

    /// The first signal ends the wait (the command then stops cleanly); one while stopping exits
    /// at once, so a stop that hangs never traps the user.
    @Test func theFirstSignalStopsTheSecondForcesTheExit() async throws {
        let forced = Mutex<[Int32]>([])
        // No window for a repeated signal: the second is a person's second Ctrl-C however soon.
        let stop = StopSignal(signals: [SIGUSR2], command: "netsim test-double", sameStop: .zero) { sig in forced.withLock { $0.append(sig) } }
        kill(getpid(), SIGUSR2)
        await stop.wait(duration: nil)  // returns only because the signal arrived
        #expect(forced.withLock { $0 }.isEmpty, "the first signal must not force anything")
        kill(getpid(), SIGUSR2)
        try await Self.waitUntil { forced.withLock { !$0.isEmpty } }
        #expect(forced.withLock { $0 } == [SIGUSR2])
        withExtendedLifetime(stop) {}
    }

    /// The same signal again at once is one stop: coreutils `timeout` sends it to the command and
    /// then to its process group. Before, the copy forced the exit and the clean stop never ran.
    /// (A window of 10 s here: the second signal is sent once the first has been read, which a
    /// loaded machine may take its time over.)
    @Test func theSameSignalAgainAtOnceIsOneStop() async throws {
        let forced = Mutex<[Int32]>([])
        let stop = StopSignal(signals: [SIGUSR2], command: "netsim test-double", sameStop: .seconds(10)) { sig in forced.withLock { $0.append(sig) } }
        kill(getpid(), SIGUSR2)
        await stop.wait(duration: nil)
        kill(getpid(), SIGUSR2)
        try await Task.sleep(for: .milliseconds(300))  // read by now
        #expect(forced.withLock { $0 }.isEmpty, "\(forced.withLock { $0 })")
        withExtendedLifetime(stop) {}
    }
}
