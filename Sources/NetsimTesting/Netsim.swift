import Foundation

/// Runs netsim scenarios with your own client from your own tests.
///
/// ```swift
/// let result = try await Netsim.run(scenario: "Scenarios/lockscreen.scn") { config in
///     MyAppClient(timeout: config.timeout)
/// }
/// #expect(result.passed, "\(result.report)")
/// ```
///
/// A run is what `netsim run FILE` does — the built-in upstream, the relay with the scenario's
/// link and faults, the timeline — with your client as the driver, judged by the same checks;
/// the result's ``NetsimRunner/RunResult/report`` is the text report `netsim run` prints.
public enum Netsim {
    /// Runs the scenario file at `path` (relative paths: from the current directory, the
    /// package's root under `swift test`).
    /// - Parameters:
    ///   - seed: overrides the scenario's seed.
    ///   - pcap: records the run's connections to this pcap file.
    ///   - name: what reports call your client.
    ///   - client: makes your client for the run from the scenario's `client:` settings
    ///     (timeout, connect timeout, pool, retries, and the CA to trust in a TLS scenario).
    public static func run(
        scenario path: String, seed: UInt64? = nil, pcap: String? = nil, name: String = "in-process",
        client: @escaping @Sendable (DriverConfig) async throws -> any NetsimClient
    ) async throws -> RunResult {
        try await run(ScenarioParser.parseToRun(file: path), seed: seed, pcap: pcap, name: name, client: client)
    }

    /// Runs a scenario written inline (the `.scn` format); `file` names it in diagnostics.
    public static func run(
        source: String, file: String = "inline.scn", seed: UInt64? = nil, pcap: String? = nil, name: String = "in-process",
        client: @escaping @Sendable (DriverConfig) async throws -> any NetsimClient
    ) async throws -> RunResult {
        try await run(ScenarioParser.parse(source: source, file: file), seed: seed, pcap: pcap, name: name, client: client)
    }

    /// Runs a parsed scenario.
    public static func run(
        _ scenario: Scenario, seed: UInt64? = nil, pcap: String? = nil, name: String = "in-process",
        client: @escaping @Sendable (DriverConfig) async throws -> any NetsimClient
    ) async throws -> RunResult {
        let inProcess = InProcessClient(name: name) { config in
            InProcessDriver(name: name, client: try await client(config))
        }
        return try await ScenarioRunner.run(scenario, options: RunOptions(seed: seed, pcapPath: pcap, inProcess: inProcess))
    }
}

extension RunResult {
    /// The text report `netsim run` prints: the verdict, each failed check with what was
    /// expected and what happened, the faults and the requests on one timeline.
    public var report: String { TextReport.render(self) }
}
