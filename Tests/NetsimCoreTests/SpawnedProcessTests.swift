import Foundation
import NetsimCore
import NetsimLoopback
import Testing

/// Every child netsim starts goes through ``SpawnedProcess``: what the child inherits, and how
/// its end is reported.
@Suite("SpawnedProcess: what a child inherits and how it ends")
struct SpawnedProcessTests {
    /// Runs `script` with /bin/sh and returns its standard output and how it ended.
    static func shell(_ script: String, environment: [String: String]? = nil, directory: String? = nil) async throws -> (String, SpawnedProcess.Termination?) {
        let output = Pipe()
        let child = try SpawnedProcess("/bin/sh", ["-c", script], environment: environment, directory: directory, standardOutput: .pipe(output))
        let text = try await offload { String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        return (text, try await offload { child.waitForExit(timeout: .seconds(30)) })
    }

    /// The child holds its three standard streams and nothing else, however many descriptors
    /// the parent has open without close-on-exec; its signal mask is empty and no signal is
    /// ignored, although it was started from a thread blocking SIGTERM in a process ignoring
    /// SIGPIPE (what Foundation's `Process` passed on).
    @Test func theChildHoldsOnlyItsStandardStreamsWithDefaultSignals() async throws {
        var open: [Int32] = []
        defer { open.forEach { close($0) } }
        for _ in 0..<50 {
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            open += ends
        }
        signal(SIGPIPE, SIG_IGN)
        // A child that only sleeps, read from /proc while it runs: posix_spawn returns once the
        // program is running. (Not a shell listing itself: dash blocks every signal for a moment
        // around each command it runs, and a listing could catch that.)
        let child = try await offload { () -> SpawnedProcess in
            var blocked = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGTERM)
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            return try SpawnedProcess("/bin/sleep", ["30"])
        }
        defer { child.send(SIGKILL) }
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(child.pid)/fd")
        let status = try String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8)
        let signals = Dictionary(uniqueKeysWithValues: status.split(separator: "\n").compactMap { line -> (String, UInt64)? in
            guard line.hasPrefix("Sig"), let mask = UInt64(line.split(separator: "\t").last ?? "", radix: 16) else { return nil }
            return (String(line.prefix(6)), mask)
        })
        #expect(Set(descriptors) == ["0", "1", "2"], "\(descriptors.sorted())")
        #expect(signals["SigBlk"] == 0, "\(status)")
        // Signals 1-31; glibc's posix_spawn leaves its two internal ones (32, 33) ignored.
        #expect(signals["SigIgn"].map { $0 & 0x7FFF_FFFF } == 0, "\(status)")
        child.send(SIGTERM)
        #expect(await child.exit(within: .seconds(30)) == .signalled(SIGTERM))
    }

    @Test func exitStatusSignalDirectoryAndEnvironment() async throws {
        let (text, ending) = try await Self.shell("pwd; echo $NETSIM_X; exit 3", environment: ["NETSIM_X": "set"], directory: "/tmp")
        #expect(text == "/tmp\nset\n")
        #expect(ending == .exited(3))
        #expect(ending?.status == 3)

        let sleeper = try SpawnedProcess("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        #expect(try await offload { sleeper.waitForExit(timeout: .milliseconds(50)) } == nil)
        sleeper.send(SIGTERM)
        let killed = try await offload { sleeper.waitForExit(timeout: .seconds(30)) }
        #expect(killed == .signalled(SIGTERM))
        #expect(killed?.status == 128 + SIGTERM)
        #expect(killed?.description == "killed by signal \(SIGTERM) (SIGTERM)")
        #expect(SpawnedProcess.Termination.signalled(SIGSEGV).description == "killed by signal \(SIGSEGV) (SIGSEGV)")
        #expect(SpawnedProcess.Termination.signalled(40).description == "killed by signal 40", "a real-time signal: no name")
        sleeper.send(SIGKILL)   // after the exit: nothing is sent, the pid may be another process's
        #expect(sleeper.termination == killed)
    }

    @Test func onExitRunsOnceTheChildHasBeenReaped() async throws {
        let ended = Waitable<SpawnedProcess.Termination?>(nil)
        let child = try SpawnedProcess("/bin/sh", ["-c", "exit 7"]) { termination in ended.update { $0 = termination } }
        #expect(await ended.wait(within: .seconds(30)) { $0 } == .exited(7))
        #expect(child.termination == .exited(7))
        #expect(waitpid(child.pid, nil, WNOHANG) == -1)   // reaped: no zombie left behind
    }

    @Test func aProgramThatCannotRunSaysWhy() {
        #expect {
            _ = try SpawnedProcess("/nonexistent/netsim-client", [])
        } throws: { error in
            "\(error)" == "cannot run /nonexistent/netsim-client: No such file or directory"
        }
        let found = try? SpawnedProcess("true", [], searchPath: true)
        #expect(found?.waitForExit(timeout: .seconds(30)) == .exited(0))
    }

    /// A script still open for writing somewhere (here: by this process, for 50 ms; in CI: in a
    /// child another test thread was starting) cannot be run (ETXTBSY) for that moment: the
    /// start is tried again. A CI run failed once with "cannot run …: Text file busy".
    @Test func aScriptBusyForAMomentStartsOnceItIsFree() async throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-busy-\(UUID().uuidString).sh").path
        defer { try? FileManager.default.removeItem(atPath: script) }
        let writer = open(script, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        try #require(writer >= 0)
        _ = "#!/bin/sh\nexit 7\n".withCString { write(writer, $0, strlen($0)) }
        let closing = Thread { usleep(50_000); close(writer) }
        closing.start()
        let child = try SpawnedProcess(script, [])
        #expect(try await offload { child.waitForExit(timeout: .seconds(30)) } == .exited(7))
    }

    /// A stat line's fields are counted from after the name's last `)`: a name may hold spaces
    /// and parentheses (a Python script's thread, `(sd-pam)`).
    @Test func aStatLineIsReadAfterTheNameWhateverItHolds() throws {
        let stat = try #require(ProcessStat("4242 (odd) name (x)) S 1 4240 4240 0 -1 4194560 " + String(repeating: "0 ", count: 12) + "98765 0"))
        #expect(stat.state == "S" && stat.isLive)
        #expect(stat.processGroup == 4240)
        #expect(stat.startTime == 98765)
        #expect(ProcessStat("4243 (gone) Z 1 4243 4243")?.isLive == false)
        #expect(ProcessStat.isLive(getpid()))
    }
}
