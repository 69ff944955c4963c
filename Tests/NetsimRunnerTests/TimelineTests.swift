import NetsimRunner
import NetsimScenario
import Testing

@Suite("Timeline steps")
struct TimelineTests {
    static func source(clear: Bool) -> String {
        """
        name: clear-all
        description: a blackhole lifted by clear all
        upstream:
          routes:
            - path: /
              body: back
        client:
          driver: resilient
          timeout: 1s
          retries: 0
        timeline:
          - fault: blackhole
          - wait: 100ms
        \(clear ? "  - clear: all\n" : "")  - request: after
            path: /
        expect:
          - request: after
            status: 200
        """
    }

    @Test(arguments: [true, false])
    func clearAllLiftsEveryFault(clear: Bool) async throws {
        let result = try await run(try scenario(Self.source(clear: clear)))
        // Without the clear the blackhole swallows the request and the client times out.
        #expect(result.passed == clear, "\(TextReport.render(result))")
    }
}
