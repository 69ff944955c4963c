import ArgumentParser
import NetsimCore
import NetsimLink
import NetsimRelay
import Testing
@testable import netsim

/// `netsim relay` flags: exact spellings, profile overrides, and errors that say what is allowed.
@Suite("netsim relay flags")
struct RelayFlagTests {
    static let upstream = ["--upstream", "127.0.0.1:9"]

    func parse(_ arguments: [String]) throws -> RelayCommand {
        try RelayCommand.parse(Self.upstream + arguments)
    }

    /// The message a person sees for a bad command line.
    func message(_ arguments: [String]) -> String {
        do {
            _ = try parse(arguments)
            return "no error"
        } catch {
            return RelayCommand.message(for: error)
        }
    }

    /// A listener given by name is named by the address it bound, and a name for loopback is no
    /// cause for the exposure warning (QA 63, QA 66: `localhost:34819`; `vm:0`, a name for
    /// 127.0.0.1, was "NOT a loopback address" on the proxy).
    @Test(arguments: [["relay", "--upstream", "127.0.0.1:9"], ["proxy"]])
    func aListenerGivenByNameIsShownByTheAddressItBound(_ command: [String]) async throws {
        let result = try await NetsimProcess.run(command + ["--listen", "localhost:0", "--duration", "200ms"])
        #expect(result.status == 0, "\(result.stderr)")
        let first = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.hasPrefix("netsim \(command[0]): 127.0.0.1:") || first.hasPrefix("netsim \(command[0]): [::1]:")
                    || first.hasPrefix("netsim \(command[0]): http://127.0.0.1:") || first.hasPrefix("netsim \(command[0]): http://[::1]:"), "\(result.stderr)")
        #expect(!result.stderr.contains("NOT a loopback address"), "\(result.stderr)")
    }

    @Test func latencyIsOneWayOnEachDirection() throws {
        let link = try parse(["--latency", "30ms"]).link.configuration()
        #expect(link.up.latency == .milliseconds(30) && link.down.latency == .milliseconds(30))
        #expect(link.roundTripNanoseconds == 60_000_000)
    }

    @Test func perDirectionFlagsOverrideBothWayFlags() throws {
        let link = try parse(["--latency", "30ms", "--down-latency", "65ms", "--bandwidth", "2mbit", "--up-bandwidth", "256kbit"])
            .link.configuration()
        #expect(link.up.latency == .milliseconds(30) && link.down.latency == .milliseconds(65))
        #expect(link.up.bandwidth == .kbit(256) && link.down.bandwidth == .mbit(2))
    }

    @Test func explicitFlagsOverrideAProfile() throws {
        let link = try parse(["--profile", "3g", "--down-latency", "10ms"]).link.configuration()
        #expect(link.down.latency == .milliseconds(10))
        #expect(link.up.latency == .milliseconds(100))
        #expect(link.down.bandwidth == .kbit(780) && link.up.bandwidth == .kbit(330))
    }

    @Test func lossModelsAndTheirParameters() throws {
        let bernoulli = try parse(["--loss", "2%"]).link.configuration()
        #expect(bernoulli.up.loss == .bernoulli(.percent(2)))
        let ge = try parse(["--loss", "5%", "--loss-model", "gilbert-elliott", "--loss-burst", "3"]).link.configuration()
        #expect(ge.down.loss == LossModel.gilbertElliott(averageLoss: .percent(5), meanBurst: 3))
        // The edge of reach is in: 80% with bursts of 4 (p = 1), and 100% (the bad state is kept).
        let edge = try parse(["--loss", "80%", "--loss-model", "gilbert-elliott"]).link.configuration()
        #expect(edge.down.loss == LossModel.gilbertElliott(averageLoss: .percent(80), meanBurst: 4))
        #expect(try parse(["--loss", "100%", "--loss-model", "gilbert-elliott"]).link.configuration().up.loss?.averageLoss == 1)
        // A both-ways loss each direction overrides is not checked (QA 49: it was refused).
        let overridden = try parse(["--loss", "99%", "--up-loss", "10%", "--down-loss", "10%", "--loss-model", "gilbert-elliott"]).link.configuration()
        #expect(overridden.up.loss == LossModel.gilbertElliott(averageLoss: .percent(10), meanBurst: 4))
        // A profile's loss, made bursty (QA 56: refused as if no loss were given).
        let profiled = try parse(["--profile", "very-bad-network", "--loss-model", "gilbert-elliott"]).link.configuration()
        let profileLoss = try #require(LinkProfile.named("very-bad-network")?.link.down.loss?.averageLoss)
        #expect(profiled.down.loss == LossModel.gilbertElliott(averageLoss: Probability(fraction: profileLoss), meanBurst: 4), "\(String(describing: profiled.down.loss))")
        let explicit = try parse(["--loss-model", "gilbert-elliott", "--ge-p", "1%", "--ge-r", "30%"]).link.configuration()
        #expect(explicit.up.loss == .gilbertElliott(p: .percent(1), r: .percent(30), badLoss: .certain, goodLoss: .zero))
    }

    /// `--duration 0s` stopped at once with exit 0 (QA 63); every long-running command refuses it.
    @Test func aDurationOfZeroIsRefused() {
        #expect(message(["--duration", "0s"]).contains("is not a duration longer than 0 (0 would stop at once)"))
        #expect(message(["--duration", "1s"]) == "no error")
        #expect(throws: (any Error).self) { try ProxyCommand.parse(["--duration", "0"]) }
        #expect(throws: (any Error).self) { try ServeCommand.parse(["--duration", "0ms"]) }
    }

    /// The shell's NAME@AT+FOR points at the relay's timing flags (QA 63: "is not a fault").
    @Test func theShellsFaultTimingNamesTheRelaysFlags() {
        #expect(message(["--fault", "blackhole@2s+3s"]).contains("write it as --fault blackhole with --fault-at AT and --fault-for FOR"))
        #expect(message(["--fault", "nonsense@2s"]).contains("is not a fault; write it as one of"))
    }

    /// QA 63: an upstream repeating the listener's port relayed each connection into another.
    @Test func anUpstreamThatIsTheRelayItselfIsRefused() {
        #expect(message(["--listen", "127.0.0.1:18102", "--upstream", "127.0.0.1:18102"]).contains("--upstream 127.0.0.1:18102 is --listen 127.0.0.1:18102, the relay itself"))
        #expect(message(["--listen", "127.0.0.1:18102", "--upstream", "localhost:18102"]).contains("the relay itself"))
        #expect(message(["--listen", "0.0.0.0:18102", "--upstream", "127.0.0.1:18102"]).contains("the relay itself"))
        #expect(!message(["--listen", "127.0.0.1:18102", "--upstream", "127.0.0.1:18103"]).contains("the relay itself"))
        #expect(message(["--listen", "127.0.0.1:18102", "--upstream", "[::1]:18102"]) == "no error", "another socket")
        // A port 0 listener is checked once bound: the port it got.
        #expect(RelayCommand.isItself(Endpoint(host: "localhost", port: 4000), bound: Endpoint(host: "::1", port: 4000)))
        #expect(!RelayCommand.isItself(Endpoint(host: "127.0.0.1", port: 4000), bound: Endpoint(host: "127.0.0.1", port: 4001)))
        // A wildcard in any spelling (Endpoint.isWildcard, the built-in server's TLS leaf's rule too).
        #expect(RelayCommand.isItself(Endpoint(host: "::1", port: 4000), bound: Endpoint(host: "0:0:0:0:0:0:0:0", port: 4000)))
        #expect(Endpoint.isWildcard("::") && Endpoint.isWildcard("0.0.0.0") && !Endpoint.isWildcard("127.0.0.1") && !Endpoint.isWildcard("localhost"))
    }

    @Test func sliceAndDistribution() throws {
        let link = try parse(["--slice", "100", "--slice-delay", "10ms", "--slice-variation", "40", "--jitter", "5ms", "--distribution", "pareto"]).link.configuration()
        #expect(link.up.sliceSize == 100 && link.up.sliceDelay == .milliseconds(10) && link.down.sliceVariation == 40)
        #expect(message(["--slice-variation", "40"]).contains("--slice-variation needs --slice BYTES"))
        #expect(link.down.jitter == .milliseconds(5) && link.down.distribution == .pareto)
    }

    @Test func faultsWithTimingTargetAndProbability() throws {
        let command = try parse([
            "--fault", "stale=rst", "--fault", "idle-close=5s", "--fault-at", "10s",
            "--fault-target", "existing", "--fault-probability", "30%", "--fault-for", "2s",
        ])
        #expect(command.faults.rules == [
            FaultRule(.stale(.rst), trigger: .at(.seconds(10)), target: .existing, probability: .percent(30), lasts: .seconds(2)),
            FaultRule(.idleClose(.seconds(5)), trigger: .at(.seconds(10)), target: .existing, probability: .percent(30), lasts: .seconds(2)),
        ])
    }

    /// `--buffer 0` was taken, and then no bulk transfer ever moved (a direction that may hold
    /// nothing never reads).
    @Test func connectionAndBufferLimitsAreOneOrMore() throws {
        #expect(try parse(["--max-connections", "500"]).maxConnections == 500)
        #expect(try parse([]).maxConnections == nil)
        #expect(message(["--max-connections", "0"]).contains("--max-connections 0: give 1 or more"), "\(message(["--max-connections", "0"]))")
        #expect(message(["--buffer", "0"]).contains("--buffer 0: give 1 byte or more"), "\(message(["--buffer", "0"]))")
        #expect(try parse(["--buffer", "1"]).buffer.bytes == 1)
        #expect(message(["--fault", "blackhole", "--fault-for", "0"]).contains("--fault-for 0: give a duration longer than 0"), "as a scenario's for: 0s")
        // 0 failed every upstream connect at once, and clients waited in silence.
        #expect(message(["--connect-timeout", "0"]).contains("--connect-timeout 0: give a duration longer than 0"), "\(message(["--connect-timeout", "0"]))")
        // The proxy's has its own default: nginx's and Squid's 60 s.
        let proxy = { (arguments: [String]) -> String in
            do { _ = try ProxyCommand.parse(arguments); return "no error" } catch { return ProxyCommand.message(for: error) }
        }
        #expect(proxy(["--connect-timeout", "0"]).contains("--connect-timeout 0: give a duration longer than 0 (0 fails every upstream connect at once); the default is 60s"),
                "\(proxy(["--connect-timeout", "0"]))")
        #expect(proxy(["--connect-timeout", "500us"]).contains("--connect-timeout 500us: give 1ms or more"), "\(proxy(["--connect-timeout", "500us"]))")
        #expect(message(["--connect-timeout", "1ns"]).contains("--connect-timeout 1ns: give 1ms or more"), "\(message(["--connect-timeout", "1ns"]))")
        #expect(try ProxyCommand.parse([]).connectTimeout == .seconds(60))
        #expect(try ProxyCommand.parse(["--connect-timeout", "5s"]).connectTimeout == .seconds(5))
    }

    @Test func listenDefaultsToLoopback() throws {
        #expect(try parse([]).listen == Endpoint(host: "127.0.0.1", port: 0))
    }

    @Test(arguments: [
        (["--latency", "30"], "30ms, 1.5s"),
        (["--bandwidth", "100"], "256kbit"),
        (["--loss", "2"], "2%"),
        (["--slice", "lots"], "64KB"),
        (["--fault", "explode"], "stale[=fin|rst]"),
        (["--fault", "idle-close"], "idle-close needs a value"),
        (["--profile", "wifi"], "3g, dsl, edge, lte, very-bad-network, 100-loss"),
        (["--distribution", "gauss"], "uniform, normal, pareto, paretonormal"),
        (["--fault-target", "some"], "all"),
        (["--fault", "refuse", "--fault-after", "1s"], "use --fault-at instead"),
        (["--fault", "rst", "--fault-at", "1s", "--fault-after", "1s"], "exclude each other"),
        (["--fault-at", "1s"], "need a --fault"),
        // QA 55: the second timing replaced the first for every fault; `existing` at start acted on nothing.
        (["--fault", "fin", "--fault-at", "1s", "--fault", "stall", "--fault-at", "5s"], "--fault-at is given 2 times: one applies to every --fault"),
        (["--fault", "fin", "--fault-target", "new", "--fault-target", "existing", "--fault-at", "1s"], "--fault-target is given 2 times"),
        (["--fault", "stale", "--fault-target", "existing"], "--fault-target existing needs --fault-at: the faults fire as the relay starts"),
        (["--fault", "fin", "--fault-after", "1s", "--fault-target", "existing"], "needs --fault-at: the faults fire as each connection opens"),
        (["--ge-p", "1%"], "go with --loss-model gilbert-elliott"),
        (["--slice-delay", "1ms"], "needs --slice"),
        (["--distribution", "normal"], "--distribution shapes the jitter, and this link has none"),
        (["--distribution", "normal", "--profile", "3g"], "--distribution shapes the jitter, and this link has none"),
        // QA 46: 99.9999% with the default burst of 4 ran as 80%, said only in the banner.
        (["--loss", "99.9999%", "--loss-model", "gilbert-elliott"],
         "--loss 99.9999% is out of reach for --loss-model gilbert-elliott: with bursts 4 segments long on average, at most 80% is lost (a good segment comes between bursts); give --loss-burst 999999 or more"),
        (["--down-loss", "91%", "--loss-model", "gilbert-elliott", "--loss-burst", "9.5"], "--down-loss 91% is out of reach"),
        // QA 49: the limit shown never rounds up to the loss refused; infinity is no burst.
        (["--loss", "98.99%", "--loss-model", "gilbert-elliott", "--loss-burst", "98"], "at most 98.989% is lost"),
        (["--loss", "99%", "--loss-model", "gilbert-elliott", "--loss-burst", "1"], "with bursts 1 segment long on average, at most 50% is lost"),
        (["--loss", "10%", "--loss-model", "gilbert-elliott", "--loss-burst", "inf"], "--loss-burst inf: give a mean number of segments, from 1 to 1000000000"),
        // The value as given, not rounded into the range it is outside of (QA 50).
        (["--loss", "10%", "--loss-model", "gilbert-elliott", "--loss-burst", "1000000000.0000001"], "--loss-burst 1000000000.0000001: give a mean number"),
        (["--loss", "10%", "--loss-model", "gilbert-elliott", "--loss-burst", "0"], "--loss-burst 0: give a mean number"),
    ] as [([String], String)])
    func badValuesSayWhatIsAllowed(arguments: [String], expected: String) {
        let text = message(arguments)
        #expect(text.contains(expected), "\(arguments) → \(text)")
    }

    /// A bad `--fault` value gets its own forms, and the `Help:` line after it is one line, not
    /// the whole catalog (about 1000 characters); `--help` still lists every fault.
    @Test func aBadFaultValueIsNotFollowedByTheWholeCatalog() throws {
        let error = try #require(throws: (any Error).self) { try parse(["--fault", "stale=rts"]) }
        let text = RelayCommand.fullMessage(for: error)
        #expect(text.contains("stale[=fin|rst]") && !text.contains("max-streams"), "\(text)")
        let help = RelayCommand.helpMessage(columns: 1000)
        for fault in FaultCatalog.all { #expect(help.contains(fault.name + fault.syntax), "\(fault.name) in --help") }
    }

    @Test func upstreamIsRequired() {
        #expect(throws: (any Error).self) { try RelayCommand.parse([]) }
    }

    @Test func tlsFlagsSayWhatGoesWithWhat() {
        #expect(message(["--upstream-insecure"]).contains("go with --tls intercept"))
        #expect(message(["--tls", "intercept", "--upstream-ca", "a.pem", "--upstream-insecure"]).contains("exclude each other"))
        #expect(message(["--tls", "decrypt"]).contains("passthrough"))
        // A missing CA file is a usage error of `relay` (it came from run(), with the root's usage).
        #expect(message(["--tls", "intercept", "--upstream-ca", "/nonexistent.pem"]).contains("--upstream-ca /nonexistent.pem: there is no such readable file"))
        // QA 41: a file that is not PEM certificates exited 1, and --alpn without interception was ignored.
        #expect(message(["--tls", "intercept", "--upstream-ca", "/etc/passwd"]).contains("--upstream-ca /etc/passwd is not one or more PEM certificates"))
        #expect(message(["--alpn", "h2"]).contains("--alpn goes with --tls intercept"))
        // QA 48: an address as --upstream-name went out as SNI, and every connection failed.
        #expect(message(["--tls", "intercept", "--upstream-name", "127.0.0.1"]).contains("--upstream-name 127.0.0.1: an address cannot be"))
        #expect(message(["--tls", "intercept", "--upstream-name", "::1"]).contains("give a DNS name"))
        #expect(!message(["--tls", "intercept", "--upstream-name", "api.example.test"]).contains("--upstream-name"))
        // QA 50: shorthand addresses, "" and spaces started the relay, and every connection failed;
        // the suggestion for ::1 pastes back.
        #expect(message(["--tls", "intercept", "--upstream-name", "127.1"]).contains("--upstream 127.0.0.1:PORT is verified as an address"))
        #expect(message(["--tls", "intercept", "--upstream-name", "::1"]).contains("--upstream [::1]:PORT"))
        // The rule is --upstream's: a name of over 253 characters was taken.
        let long = Array(repeating: String(repeating: "a", count: 63), count: 4).joined(separator: ".")
        for (bad, said) in [("", "'' is not a host name: labels"), ("local host", "'local host' is not a host name: a space"),
                            ("a..b", "'a..b' is not a host name: labels"), (long, "'\(long)' is not a host name: labels"),
                            ("1.2.3.4.5", "'1.2.3.4.5' is not an IPv4 address")] {
            #expect(message(["--tls", "intercept", "--upstream-name", bad]).contains("--upstream-name \(said)"), "\(bad)")
        }
        #expect(!message(["--tls", "intercept", "--upstream-name", "api.example.test."]).contains("--upstream-name"))
        #expect(message(["--upstream-name", "api.example.test"]).contains("--upstream-name goes with --tls intercept"))
    }

    /// `--upstream-name` is the relay's: the proxy verifies each destination by the name its
    /// client asked for. Its help listed the option anyway ("netsim relay only"); given, the
    /// option is refused with that reason, whatever its value.
    @Test func onlyTheRelayOffersUpstreamName() throws {
        #expect(RelayCommand.helpMessage(columns: 1000).contains("--upstream-name <name>"))
        #expect(!ProxyCommand.helpMessage(columns: 1000).contains("upstream-name"))
        for value in ["api.example.test", "127.0.0.1"] {
            let error = try #require(throws: (any Error).self) { try ProxyCommand.parse(["--tls", "intercept", "--upstream-name", value]) }
            #expect(ProxyCommand.fullMessage(for: error).contains("--upstream-name is for netsim relay"), "\(value)")
        }
    }

    /// An HTTP/2 fault is noted where it can never act: without interception, or with an ALPN
    /// that offers no h2 (QA 57: `--tls intercept --fault goaway` with the default ALPN, and
    /// `netsim proxy` in either case, said nothing).
    @Test func anHTTP2FaultThatCannotActIsNoted() throws {
        func notes(_ arguments: [String]) throws -> [String] {
            let command = try parse(arguments + ["--fault", "goaway", "--fault", "rst"])
            return command.faults.rules.compactMap { command.tlsOptions.http2Note(for: $0, command: "relay") }
        }
        #expect(try notes([]) == ["goaway acts on HTTP/2 the relay intercepts; without --tls intercept it does nothing"])
        #expect(try notes(["--tls", "intercept"]).map { $0.contains("--alpn does not offer h2") } == [true])
        #expect(try notes(["--tls", "intercept", "--alpn", "http/1.1"]).count == 1)
        #expect(try notes(["--tls", "intercept", "--alpn", "h2,http/1.1"]) == [])
        #expect(try notes(["--tls", "intercept", "--alpn", "h2"]) == [])
        let proxy = try ProxyCommand.parse(["--fault", "max-streams=2"])
        #expect(proxy.faults.rules.compactMap { proxy.tlsOptions.http2Note(for: $0, command: "proxy") }
                == ["max-streams acts on HTTP/2 the proxy intercepts; without --tls intercept it does nothing"])
    }
}
