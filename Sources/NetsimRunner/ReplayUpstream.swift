import Foundation
import NetsimCore
import NetsimHTTP
import NetsimPcap
import NetsimScenario

/// `upstream: { replay: FILE }`: a capture's server side as the scenario's upstream (pcap
/// support, docs/pcap.md).
enum ReplayUpstream {
    /// Finds the capture as ``ScenarioPaths`` does (beside the scenario file first); loads
    /// it and starts a replay server on a free loopback port. A missing or unreadable capture
    /// is the scenario's mistake (exit status 2).
    static func start(_ path: String, scenarioFile: String, workingDirectory: String) async throws -> (endpoint: Endpoint, server: ReplayServer) {
        let file = ScenarioPaths.resolve(path, scenarioFile: scenarioFile, workingDirectory: workingDirectory)
        let plan: ReplayPlan
        do {
            plan = try ReplayPlan(capture: Capture.load(path: file))
        } catch {
            throw RunnerError.invalid("\(scenarioFile): upstream replay: \(error)")
        }
        let server = ReplayServer(plan: plan)
        do {
            return (try await server.start(), server)
        } catch {
            await server.stop()
            throw RunnerError.failed("cannot start the replay upstream: \(error)")
        }
    }

    /// What the replay received, as the built-in server reports it, so `expect: server` works.
    static func serverRequests(_ server: ReplayServer, origin: Int64) -> [ServerRequest] {
        server.requests.map { r in
            ServerRequest(
                method: r.method, path: String(r.target.prefix { $0 != "?" }), bodyBytes: r.bodyBytes,
                connection: r.connection, reusedConnection: r.reusedConnection, time: r.time - origin, status: r.status)
        }
    }
}
