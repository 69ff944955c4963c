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
            plan = try Self.plan(file)
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

    /// Why the capture at `file` (a resolved path) cannot be replayed, or nil: it is loaded and
    /// planned as ``start(_:scenarioFile:workingDirectory:)`` does. The scenario parser's
    /// ``ScenarioParser/CaptureCheck``; the message leaves out the path, which the parser names.
    static let problem: ScenarioParser.CaptureCheck = { file in
        do {
            _ = try Self.plan(file)
            return nil
        } catch {
            let message = "\(error)"
            return message.hasPrefix(file + ": ") ? String(message.dropFirst(file.count + 2)) : message
        }
    }

    /// The capture at `file` planned for a scenario. A file that ends in the middle of a packet
    /// is refused, though `netsim replay` serves its whole packets with a note: a run has no
    /// place for the note, and requests past the cut waited out the client's timeout with
    /// nothing said (QA 68; pcap.md promises `netsim check` the error).
    static func plan(_ file: String) throws -> ReplayPlan {
        let capture = try Capture.load(path: file)
        if let cut = capture.endsCut {
            throw CaptureCut(description: "\(file): the file ends in the middle of a packet, after \(capture.packetCount) whole one\(capture.packetCount == 1 ? "" : "s") (\(cut)); a scenario replays whole captures: keep the whole packets with `editcap \(file) whole.pcap`, or capture again")
        }
        return try ReplayPlan(capture: capture)
    }

    struct CaptureCut: Error, CustomStringConvertible {
        let description: String
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

extension ScenarioParser {
    /// Parses and validates a scenario file as netsim's commands run it: a `replay:` capture is
    /// read whole, as the run reads it (``ReplayUpstream/problem``), so `netsim check` refuses,
    /// with its place, a capture the run could not replay.
    public static func parseToRun(file path: String) throws(ScenarioErrors) -> Scenario {
        try parse(file: path, captureCheck: ReplayUpstream.problem)
    }
}
