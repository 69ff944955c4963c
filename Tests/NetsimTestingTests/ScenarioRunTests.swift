import Foundation
import NetsimTesting
import Testing

/// Scenarios with an in-process client, as a package's own `swift test` runs them.
@Suite("NetsimTesting: scenarios with your own client")
struct ScenarioRunTests {
    /// Two requests, the second after the server's FIN on the first connection.
    static let serverFin = """
        name: library-server-fin
        description: the server closes idle connections; the next request must still succeed
        seed: 7
        upstream:
          routes:
            - path: /feed
              body: 'fresh'
        client:
          driver: resilient   # what `netsim run` uses; Netsim.run drives the test's own client
          timeout: 5s
        timeline:
          - at: 0s
            request: first
            path: /feed
          - wait: 200ms
          - fault: fin
            target: existing
          - wait: 200ms
          - request: second
            path: /feed
        expect:
          - request: first
            status: 200
          - request: second
            error: none
            body: 'fresh'
            within: 2s
        """

    @Test func aRealClientRunsAScenarioAndIsJudged() async throws {
        let result = try await Netsim.run(source: Self.serverFin, name: "urlsession (mine)") { config in
            #expect(config.timeout == .seconds(5))
            return URLSessionClient(timeout: config.timeout)
        }
        #expect(result.passed, "\(result.report)")
        #expect(result.driverName == "urlsession (mine)")
        #expect(result.outcomes.map(\.name) == ["first", "second"])
        // The relay saw each request by its tag: the outcomes know their connections.
        #expect(result.outcomes.allSatisfy { $0.connection != nil })
        #expect(result.report.contains("PASS library-server-fin"))
    }

    /// A client that fails after the fault fails the run, with the check and its own message.
    @Test func aClientThatDoesNotRecoverFailsTheRun() async throws {
        let result = try await Netsim.run(source: Self.serverFin, name: "gives up") { config in
            let real = URLSessionClient(timeout: config.timeout)
            return ClosureClient { request in
                if request.tag?.hasPrefix("second") == true {
                    throw ClientFailure(.reset, "connection reset by peer (my pool's dead connection)")
                }
                return try await real.perform(request)
            } shutdown: { await real.shutdown() }
        }
        #expect(!result.passed)
        #expect(result.failures.map(\.title).contains("request second: error none"), "\(result.report)")
        #expect(result.outcomes.last?.response.error == .reset)
        #expect(result.clientLog.contains("my pool's dead connection"))
    }

    @Test func aBundledScenarioFileRuns() async throws {
        let result = try await Netsim.run(scenario: repositoryRoot + "/Scenarios/server-fin.scn") { config in
            URLSessionClient(timeout: config.timeout)
        }
        #expect(result.passed, "\(result.report)")
    }

    @Test func aMalformedScenarioSaysWhereAndWhat() async throws {
        await #expect {
            _ = try await Netsim.run(source: "name: x\ntimeline:\n  - at: soon\n", file: "mine.scn") { _ in
                ClosureClient { _ in NetsimResponse(status: 200) }
            }
        } throws: { error in
            "\(error)".contains("mine.scn:3:")
        }
    }

    @Test func thrownErrorsAreClassifiedAsTheDriversDo() {
        #expect(ClientErrorKind.of(URLError(.networkConnectionLost)) == .reset)
        #expect(ClientErrorKind.of(URLError(.timedOut)) == .timeout)
        #expect(ClientErrorKind.of(URLError(.cannotConnectToHost)) == .refused)
        #expect(ClientErrorKind.of(POSIXError(.ECONNREFUSED)) == .refused)
        #expect(ClientErrorKind.of(POSIXError(.EPIPE)) == .reset)
        #expect(ClientErrorKind.of(ClientFailure(.dns, "no such host")) == .dns)
        #expect(ClientErrorKind.of(CancellationError()) == .other)
    }
}

/// The repository's root (the bundled scenarios), from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
