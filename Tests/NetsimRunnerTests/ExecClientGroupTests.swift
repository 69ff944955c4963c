import Foundation
import NetsimCore
@testable import NetsimRunner
import NetsimScenario
import Testing

/// An exec client leads a process group of its own, and what it leaves in it ends with it (QA 62:
/// a wrapper script that ran the real client without `exec` was signalled alone; the script
/// died and the client ran on, orphaned, while the report said netsim had terminated it; a
/// client that started `sleep 1000` passed and left it running).
@Suite("exec clients: the process group")
struct ExecClientGroupTests {
    static let oneRequest = """
        name: group
        description: one request from a client that leaves something behind
        upstream:
          routes:
            - path: /feed
        client:
          driver: exec
          command: [replaced-by-the-exec-client]
          timeout: 5s
        timeline:
          - request: one
            path: /feed
        expect:
          - request: one
            status: 200
        """

    /// A client that writes its pid (and its helper's) to `pids`, answers each request with 200,
    /// and at the end of its stdin either lingers (`linger`) or exits 0 leaving a helper running.
    static func client(_ folder: URL, _ mode: String) throws -> String {
        let path = folder.appendingPathComponent("client.py").path
        try #"""
            import json, os, subprocess, sys, time
            mode, pids = sys.argv[1], sys.argv[2]
            helper = subprocess.Popen(["sleep", "1000"]) if mode == "helper" else None
            open(pids, "w").write(" ".join(str(p) for p in [os.getpid()] + ([helper.pid] if helper else [])))
            sys.stdin.readline()
            print(json.dumps({"type": "hello", "name": "grouped", "protocol": 1}), flush=True)
            for line in sys.stdin:
                request = json.loads(line)
                print(json.dumps({"id": request["id"], "status": 200, "headers": {}, "body_sha256": None, "body_length": 0,
                                  "body": "", "error": None, "local_port": None, "elapsed": 0}), flush=True)
            if mode == "linger":
                time.sleep(1000)
            """#.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }


    static func pids(_ file: URL) throws -> [Int32] {
        try String(contentsOf: file, encoding: .utf8).split(separator: " ").compactMap { Int32($0) }
    }

    /// The wrapper shell gets SIGTERM 3 s after stdin closed, and so does the client it runs.
    @Test func aWrappersClientEndsWithIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-group-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pids")
        let script = try Self.client(folder, "linger")
        // No `exec`: the shell waits for its child, as a wrapper without it does.
        let wrapper = ExecClient(command: ["sh", "-c", "python3 \(script) linger \(pidFile.path); echo wrapper done"], directory: repositoryRoot)
        let result = try await ScenarioRunner.run(try scenario(Self.oneRequest), options: RunOptions(exec: wrapper))
        #expect(result.failures.map(\.actual) == ["did not exit within 3 s after stdin closed; netsim terminated it (SIGTERM)"],
                "\(TextReport.render(result))")
        let client = try #require(try Self.pids(pidFile).first)
        #expect(!ProcessStat.isLive(client), "the wrapper's client \(client) outlived the run")
        if ProcessStat.isLive(client) { kill(client, SIGKILL) }
    }

    /// A client that exits 0 and leaves a helper in its group passes, and the helper is ended and
    /// named in the client's log.
    @Test func whatAClientLeavesInItsGroupIsEndedAndSaid() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netsim-group-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pidFile = folder.appendingPathComponent("pids")
        let client = ExecClient(command: ["python3", try Self.client(folder, "helper"), "helper", pidFile.path], directory: repositoryRoot)
        let result = try await ScenarioRunner.run(try scenario(Self.oneRequest), options: RunOptions(exec: client))
        #expect(result.passed, "\(TextReport.render(result))")
        let helper = try #require(try Self.pids(pidFile).last)
        #expect(!ProcessStat.isLive(helper), "the client's helper \(helper) outlived the run")
        if ProcessStat.isLive(helper) { kill(helper, SIGKILL) }
        #expect(result.clientLog.contains("[netsim] the exec client left process \(helper) running in its process group when it ended; netsim terminated it (SIGTERM)"),
                "\(result.clientLog)")
    }
}
