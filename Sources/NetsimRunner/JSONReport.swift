import Foundation
import NetsimHTTP
import NetsimScenario

/// `--json`: a run, or a suite of runs, as one JSON document (docs/running.md).
///
/// Each type spells its keys in `CodingKeys`; an optional that is nil is left out (not written
/// as null), and keys are written sorted.
public enum JSONReport {
    /// One run: what `netsim run --json` writes, and an entry of a suite's `runs`.
    public struct Run: Codable, Sendable, Equatable {
        public var scenario: String
        public var file: String
        public var driver: String
        /// The seed of the run's random decisions: `netsim run --seed N` makes the same ones.
        public var seed: UInt64?
        public var passed: Bool
        public var durationSeconds: Double
        public var checks: [Check]
        public var requests: [Request]
        public var serverRequests: [ServerRequest]
        /// A client that accepted a certificate it must refuse (`bad-cert`); absent when none.
        public var securityFindings: [String]?
        /// In a suite (`netsim test`): the client as `--client` names it — the matrix's column,
        /// where `driver` is what the client calls itself.
        public var client: String?
        /// In a suite: the command that runs this one again alone, as it ran.
        public var again: String?

        enum CodingKeys: String, CodingKey {
            case scenario, file, driver, client, seed, passed, durationSeconds = "duration_seconds", checks, requests
            case serverRequests = "server_requests", securityFindings = "security_findings", again
        }

        public init(_ result: RunResult) {
            scenario = result.scenario.name
            file = result.scenario.file
            driver = result.driverName
            seed = result.seed
            passed = result.passed
            durationSeconds = Double(result.duration) / 1e9
            checks = result.verdicts.map(Check.init)
            requests = result.outcomes.map(Request.init)
            serverRequests = result.serverRequests.map(ServerRequest.init)
            securityFindings = result.securityFindings.isEmpty ? nil : result.securityFindings
        }
    }

    /// The verdict on one check.
    public struct Check: Codable, Sendable, Equatable {
        public var title: String
        public var passed: Bool
        public var expected: String
        public var actual: String
        /// Why a pass may say little (``CheckVerdict/note``); absent when nothing limits it.
        public var note: String?
        /// `file:line:column` of the check in the scenario.
        public var location: String
        /// `library` (the library's own behaviour) or `policy` (an application policy on top).
        public var judges: String

        enum CodingKeys: String, CodingKey { case title, passed, expected, actual, note, location, judges }

        public init(_ verdict: CheckVerdict) {
            judges = verdict.expectation.judges.rawValue
            title = verdict.title
            passed = verdict.passed
            expected = verdict.expected
            actual = verdict.actual
            note = verdict.note
            location = verdict.check.location.description
        }
    }

    /// One request the client made, and what came of it. Times are seconds of scenario time.
    public struct Request: Codable, Sendable, Equatable {
        public var name: String
        public var index: Int
        public var method: String
        public var path: String
        public var started: Double
        public var finished: Double
        public var status: Int?
        public var error: String?
        public var errorMessage: String?
        public var bodySHA256: String?
        public var bodyLength: Int?
        /// The answer's headers, names lower-cased, repeats joined with `, ` (what `headers:`
        /// checks judge); absent on failure.
        public var headers: [String: String]?
        /// The relay connection that carried it, when known.
        public var connection: Int?
        public var reusedConnection: Bool?
        /// True when the client answered from its own cache (absent otherwise).
        public var fromClientCache: Bool?

        enum CodingKeys: String, CodingKey {
            case name, index, method, path, started, finished, status, error, errorMessage = "error_message"
            case bodySHA256 = "body_sha256", bodyLength = "body_length", headers, connection, reusedConnection = "reused_connection"
            case fromClientCache = "from_client_cache"
        }

        public init(_ outcome: RequestOutcome) {
            name = outcome.name
            index = outcome.index
            method = outcome.method
            path = outcome.path
            started = Double(outcome.started) / 1e9
            finished = Double(outcome.finished) / 1e9
            status = outcome.response.status
            error = outcome.response.error?.rawValue
            errorMessage = outcome.response.errorMessage
            bodySHA256 = outcome.response.bodySHA256
            bodyLength = outcome.response.bodyLength
            let names = Set(outcome.response.headers.map { $0.name.lowercased() })
            headers = outcome.response.error != nil ? nil
                : Dictionary(uniqueKeysWithValues: names.compactMap { name in HeaderCheck.value(of: name, in: outcome.response.headers).map { (name, $0) } })
            connection = outcome.connection.map { Int($0.raw) }
            reusedConnection = outcome.reusedConnection
            fromClientCache = outcome.response.fromClientCache ? true : nil
        }
    }

    /// One request the upstream received. `connection` is the server's own count (1, 2, …).
    public struct ServerRequest: Codable, Sendable, Equatable {
        public var method: String
        public var path: String
        public var connection: Int
        /// Seconds of scenario time.
        public var time: Double
        public var status: Int
        /// `HTTP/1.1`, `HTTP/2`.
        public var version: String
        /// The HTTP/2 stream id; absent for HTTP/1.x.
        public var stream: Int?

        enum CodingKeys: String, CodingKey { case method, path, connection, time, status, version, stream }

        public init(_ request: NetsimHTTP.ServerRequest) {
            method = request.method
            path = request.path
            connection = request.connection
            time = Double(request.time) / 1e9
            status = request.status
            version = request.version.description
            stream = request.stream
        }
    }

    /// A run netsim could not even start (`netsim test` goes on with the others).
    public struct Failure: Codable, Sendable, Equatable {
        public var scenario: String
        public var file: String
        /// The driver the run was to use, as a run entry names it; absent in files written before.
        public var driver: String?
        /// The seed it was to run with: `netsim run --seed N` tries the same run again.
        public var seed: UInt64?
        /// Always false; there so that every entry of `runs` has `passed`.
        public var passed = false
        public var error: String
        /// The client as `--client` names it, as in a run entry.
        public var client: String?
        /// The command that tries it again alone.
        public var again: String?

        enum CodingKeys: String, CodingKey { case scenario, file, driver, client, seed, passed, error, again }

        public init(scenario: String, file: String, driver: String? = nil, seed: UInt64? = nil, error: String,
                    client: String? = nil, again: String? = nil) {
            self.scenario = scenario
            self.file = file
            self.driver = driver
            self.seed = seed
            self.error = error
            self.client = client
            self.again = again
        }
    }

    /// `netsim test --json`: the totals of the summary line, every run in job order and, with
    /// more than one driver, the matrix.
    public struct Suite: Codable, Sendable, Equatable {
        public var runs: [Entry]
        public var matrix: Matrix?
        /// Scenarios not run, and why: this machine cannot (a packet link without root), or the
        /// suite was interrupted first.
        public var skipped: [Skipped]
        /// The signal that interrupted the suite (`SIGTERM`): the file holds the runs that
        /// finished, and those it stopped as failures. Absent when the suite ran to its end.
        public var interrupted: String?

        public struct Skipped: Codable, Sendable, Equatable {
            public var scenario: String
            public var file: String
            public var reason: String
            public init(scenario: String, file: String, reason: String) {
                self.scenario = scenario
                self.file = file
                self.reason = reason
            }
        }

        /// Runs that passed, and runs that failed or could not run (`N passed, N failed`):
        /// written first in the file, always counted from `runs`.
        public var passed: Int { runs.filter(\.passed).count }
        public var failed: Int { runs.count - passed }

        enum CodingKeys: String, CodingKey { case interrupted, passed, failed, skipped, runs, matrix }

        public init(runs: [Entry], matrix: Matrix? = nil, skipped: [Skipped] = [], interrupted: String? = nil) {
            self.runs = runs
            self.matrix = matrix
            self.skipped = skipped
            self.interrupted = interrupted
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(runs: try container.decode([Entry].self, forKey: .runs), matrix: try container.decodeIfPresent(Matrix.self, forKey: .matrix),
                      skipped: try container.decodeIfPresent([Skipped].self, forKey: .skipped) ?? [],
                      interrupted: try container.decodeIfPresent(String.self, forKey: .interrupted))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(interrupted, forKey: .interrupted)
            try container.encode(passed, forKey: .passed)
            try container.encode(failed, forKey: .failed)
            if !skipped.isEmpty { try container.encode(skipped, forKey: .skipped) }
            try container.encode(runs, forKey: .runs)
            try container.encodeIfPresent(matrix, forKey: .matrix)
        }
    }

    /// An entry of a suite's `runs`: the run's report, or why it could not run.
    public enum Entry: Codable, Sendable, Equatable {
        case run(Run)
        case failure(Failure)

        public func encode(to encoder: any Encoder) throws {
            switch self {
            case .run(let run): try run.encode(to: encoder)
            case .failure(let failure): try failure.encode(to: encoder)
            }
        }

        public init(from decoder: any Decoder) throws {
            self = if let run = try? Run(from: decoder) { .run(run) } else { .failure(try Failure(from: decoder)) }
        }

        public var passed: Bool {
            if case .run(let run) = self { run.passed } else { false }
        }
    }

    /// The matrix: drivers, scenarios, and each measured cell with the outcome of every run.
    public struct Matrix: Codable, Sendable, Equatable {
        public var drivers: [String]
        public var scenarios: [String]
        /// Scenario → driver → cell; every scenario has an entry, a cell without runs has none.
        public var cells: [String: [String: Cell]]

        enum CodingKeys: String, CodingKey { case drivers, scenarios, cells }

        public init(_ measurement: MatrixMeasurement) {
            drivers = measurement.drivers
            scenarios = measurement.scenarios
            cells = Dictionary(uniqueKeysWithValues: measurement.scenarios.map { scenario in
                (scenario, Dictionary(uniqueKeysWithValues: measurement.drivers.compactMap { driver -> (String, Cell)? in
                    let runs = measurement.runs(scenario, driver)
                    guard !runs.isEmpty else { return nil }
                    return (driver, Cell(cell: MatrixCell(runs: runs).description, runs: runs.map(\.description)))
                }))
            })
        }
    }

    /// One cell: as the matrix shows it, and each run's outcome.
    public struct Cell: Codable, Sendable, Equatable {
        public var cell: String
        public var runs: [String]

        enum CodingKeys: String, CodingKey { case cell, runs }
    }

    /// The document as written: pretty-printed, keys sorted.
    public static func data(_ report: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(report)
    }
}
