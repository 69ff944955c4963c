import NetsimCore
import Testing
@testable import NetsimScenario

/// `client.settings` for netsim's own drivers: a value they could not read, or a misspelt key,
/// was dropped without a word (`idle_timeout: 5`, `backof: 2s`) and the run went on without it.
@Suite("Scenario files: client settings")
struct ClientSettingsTests {
    static let file = "Scenarios/settings.scn"

    static func scenario(driver: String, settings: String) -> String {
        """
        name: settings
        description: Client settings.
        upstream:
          routes:
            - path: /feed
        client:
          driver: \(driver)
        \(driver == "exec" ? "  command: [python3, client.py]\n" : "")  settings: { \(settings) }
        timeline:
          - request: feed
            path: /feed
        expect:
          - request: feed
            status: 200

        """
    }

    func messages(driver: String, _ settings: String) -> [String] {
        parseDiagnostics(Self.scenario(driver: driver, settings: settings), file: Self.file).map(\.message)
    }

    @Test func valuesTheBuiltInDriversCannotReadAreErrors() {
        #expect(messages(driver: "resilient", "idle_timeout: 5, retry_after_cap: soon") == [
            "idle_timeout: '5' is not a duration", "retry_after_cap: 'soon' is not a duration",
        ])
        #expect(messages(driver: "async-http-client", "retry_connect: maybe") == ["unknown 'retry_connect' value 'maybe'"])
        #expect(messages(driver: "urlsession", "cache: nope") == ["unknown 'cache' value 'nope'"])
    }

    @Test func aKeyCloseToOneTheyReadIsAnErrorWithTheSuggestion() {
        let found = parseDiagnostics(Self.scenario(driver: "resilient", settings: "backof: 2s"), file: Self.file)
        #expect(found.map(\.message) == ["unknown setting 'backof' for the resilient driver"])
        #expect(found.first?.hint?.hasPrefix("did you mean 'backoff'?") == true)
    }

    /// A scenario may carry another client's settings, and an exec client's are its own.
    @Test func otherKeysAndExecClientsAreLeftAlone() {
        #expect(messages(driver: "resilient", "backoff: 200ms, cache: \"off\", block: \"true\", my_option: x, backoff_max: \"2\"") == [])
        #expect(messages(driver: "exec", "idle_timeout: 5, backof: 2") == [])
    }

    /// The same reading, asked of a parsed scenario by the runner when `--client` names one of
    /// netsim's drivers over a scenario written for another.
    @Test func aScenarioForExecSaysWhatABuiltInDriverCouldNotRead() throws {
        let parsed = try ScenarioParser.parse(source: Self.scenario(driver: "exec", settings: "idle_timeout: 5, backof: 2s, cache: nope, backoff: 1s, my_option: x"), file: Self.file)
        let problems = parsed.client.unreadableBuiltinSettings()
        #expect(problems.count == 3)
        #expect(problems.first == "unknown setting 'backof': did you mean 'backoff'?")
        #expect(problems.dropFirst().first == "'cache: nope' is not one of protocol, off, none, false")
        #expect(problems.last?.hasPrefix("'idle_timeout: 5': '5' is not a duration") == true, "\(problems)")
    }
}
