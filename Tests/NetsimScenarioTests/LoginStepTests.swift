import NetsimFaults
import NetsimScenario
import Testing

/// The `login` step: the user signs in at a captive portal.
@Suite("login step")
struct LoginStepTests {
    static func scenario(_ timeline: String) -> String {
        """
        name: portal
        description: login
        upstream:
          routes:
            - path: /
        client:
          driver: resilient
        timeline:
        \(timeline)
          - request: after
            path: /
        expect:
          - request: after
            status: 200
        """
    }

    @Test func loginAfterAPortalParses() throws {
        for form in ["login:", "login: true", "login: yes", "login: on", "login: True"] {  // the words every boolean takes
            let text = Self.scenario("""
                  - fault: portal=page,tls=close
                  - at: 2s
                    \(form)
                """)
            let steps = try ScenarioParser.parse(source: text, file: "t.scn").timeline
            #expect(steps[0].action == .fault(name: nil, rule: FaultRule(.portal(PortalSettings(answer: .page, tls: .close)))))
            #expect(steps[1].action == .login && steps[1].at == .seconds(2), "\(form)")
        }
    }

    static func errors(_ timeline: String) -> String {
        do {
            _ = try ScenarioParser.parse(source: Self.scenario(timeline), file: "t.scn")
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test func loginWithoutAPortalBeforeItIsAnError() {
        let text = Self.errors("""
              - login:
              - fault: portal
            """)
        #expect(text.contains("t.scn:9:5: error: 'login' signs in at a captive portal, but no portal fault was added before this step"), "\(text)")
        #expect(text.contains("hint: add the portal first"))
    }

    @Test func loginTakesNoValue() {
        let text = Self.errors("""
              - fault: portal
              - login: portal
            """)
        #expect(text.contains("t.scn:10:12: error: 'login' takes no value"), "\(text)")
    }
}
