import ArgumentParser
import NetsimCore
import NetsimLink
import NetsimScenario

/// The link-model flags shared by every command that shapes traffic.
struct LinkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Start from a named link profile (see `netsim profiles`); explicit flags override it. Example: --profile 3g", valueName: "name"),
            transform: parseProfile)
    var profile: LinkProfile?

    @Option(help: ArgumentHelp("One-way delay added to each direction, so the round trip grows by twice this. Example: --latency 100ms", valueName: "duration"), transform: parseDuration)
    var latency: Duration?
    @Option(name: .customLong("up-latency"), help: ArgumentHelp("Delay client→server only. Example: 50ms", valueName: "duration"), transform: parseDuration)
    var upLatency: Duration?
    @Option(name: .customLong("down-latency"), help: ArgumentHelp("Delay server→client only. Example: 65ms", valueName: "duration"), transform: parseDuration)
    var downLatency: Duration?

    @Option(help: ArgumentHelp("Variation of the delay, each direction (through the relay bytes never overtake each other; netsim shell reorders only with --reorder). Example: --jitter 10ms", valueName: "duration"), transform: parseDuration)
    var jitter: Duration?
    @Option(name: .customLong("up-jitter"), help: ArgumentHelp("Jitter client→server only. Example: 5ms", valueName: "duration"), transform: parseDuration)
    var upJitter: Duration?
    @Option(name: .customLong("down-jitter"), help: ArgumentHelp("Jitter server→client only. Example: 20ms", valueName: "duration"), transform: parseDuration)
    var downJitter: Duration?
    @Option(help: ArgumentHelp("Jitter distribution: uniform (±jitter), normal, pareto, paretonormal (jitter is the standard deviation). Default: uniform", valueName: "name"), transform: parseDistribution)
    var distribution: JitterDistribution?

    @Option(help: ArgumentHelp("Rate cap each direction: of each connection through netsim relay and proxy (four downloads at once get four times it), of the whole link in netsim shell. Units: bit, kbit, mbit, gbit, bps, kbps, mbps (megabits), gbps; bytes with an upper-case B: B/s, KB/s, MB/s, GB/s, KBps, MBps. Example: --bandwidth 2mbit", valueName: "rate"), transform: parseRate)
    var bandwidth: DataRate?
    @Option(name: .customLong("up-bandwidth"), help: ArgumentHelp("Rate cap client→server only (per connection through the relay). Example: 256kbit", valueName: "rate"), transform: parseRate)
    var upBandwidth: DataRate?
    @Option(name: .customLong("down-bandwidth"), help: ArgumentHelp("Rate cap server→client only (per connection through the relay). Example: 100KB/s", valueName: "rate"), transform: parseRate)
    var downBandwidth: DataRate?

    @Option(help: ArgumentHelp("Segment loss each direction: through the relay as TCP would experience it (retransmission stalls, window collapse, SYN retries; no byte goes missing); in netsim shell packets are dropped. Example: --loss 2%", valueName: "percent"), transform: parseProbability)
    var loss: Probability?
    @Option(name: .customLong("up-loss"), help: ArgumentHelp("Loss client→server only (also loses SYNs). Example: 1%", valueName: "percent"), transform: parseProbability)
    var upLoss: Probability?
    @Option(name: .customLong("down-loss"), help: ArgumentHelp("Loss server→client only (also loses SYN-ACKs). Example: 5%", valueName: "percent"), transform: parseProbability)
    var downLoss: Probability?
    @Option(name: .customLong("loss-model"), help: ArgumentHelp("bernoulli (independent losses, default) or gilbert-elliott (bursts). Example: --loss 2% --loss-model gilbert-elliott", valueName: "model"))
    var lossModel: LossModelName?
    @Option(name: .customLong("loss-burst"), help: ArgumentHelp("gilbert-elliott: mean burst length in segments, with the average loss from --loss. Default: 4. Example: --loss-burst 8", valueName: "segments"))
    var lossBurst: Double?
    @Option(name: .customLong("ge-p"), help: ArgumentHelp("gilbert-elliott: probability of going from the good to the bad state per segment, with --ge-r (the two override --loss/--loss-burst). Example: --ge-p 1% --ge-r 25%", valueName: "percent"), transform: parseProbability)
    var geP: Probability?
    @Option(name: .customLong("ge-r"), help: ArgumentHelp("gilbert-elliott: probability of going from bad back to good, with --ge-p. Example: 25%", valueName: "percent"), transform: parseProbability)
    var geR: Probability?
    @Option(name: .customLong("ge-bad-loss"), help: ArgumentHelp("gilbert-elliott: loss in the bad state. Default: 100%. Example: 80%", valueName: "percent"), transform: parseProbability)
    var geBadLoss: Probability?
    @Option(name: .customLong("ge-good-loss"), help: ArgumentHelp("gilbert-elliott: loss in the good state. Default: 0%. Example: 0.1%", valueName: "percent"), transform: parseProbability)
    var geGoodLoss: Probability?

    @Option(help: ArgumentHelp("netsim relay and proxy: cut the stream into pieces of this size (each direction). Example: --slice 100", valueName: "bytes"), transform: parseBytes)
    var slice: ByteCount?
    @Option(name: .customLong("slice-delay"), help: ArgumentHelp("netsim relay and proxy: pause between slices. Example: --slice-delay 10ms", valueName: "duration"), transform: parseDuration)
    var sliceDelay: Duration?
    @Option(name: .customLong("slice-variation"), help: ArgumentHelp("netsim relay and proxy: vary each slice's size by up to this many bytes either way, from the seed (Toxiproxy's size_variation). Example: --slice 100 --slice-variation 50", valueName: "bytes"), transform: parseBytes)
    var sliceVariation: ByteCount?

    @Option(name: .customLong("trace-up"), help: ArgumentHelp("Client→server capacity from a recorded link in Mahimahi's format (one line per 1500-byte delivery opportunity, in ms; it repeats), instead of --bandwidth. Example: --trace-up Fixtures/traces/mahimahi/Verizon-LTE-short.up", valueName: "file"), transform: parseTrace)
    var traceUp: DeliveryTrace?
    @Option(name: .customLong("trace-down"), help: ArgumentHelp("Server→client capacity from a Mahimahi trace, instead of --bandwidth. Example: --trace-down Fixtures/traces/mahimahi/Verizon-LTE-short.down", valueName: "file"), transform: parseTrace)
    var traceDown: DeliveryTrace?

    func validate() throws {
        // The rules live with the shared settings (NetsimScenario.LinkSettings); the words here name the flags.
        guard let problem = settings.problems.first else { return }
        switch problem {
        case .gilbertElliottParametersWithoutModel:
            throw ValidationError("--loss-burst and --ge-* go with --loss-model gilbert-elliott")
        case .gilbertElliottWithoutLoss:
            throw ValidationError("--loss-model gilbert-elliott needs --loss (average loss) or --ge-p and --ge-r")
        case .gilbertElliottPWithoutR:
            throw ValidationError("--ge-p and --ge-r go together")
        case .lossBurstOutOfRange:
            // As typed, near enough: Swift's shortest form (1000000000.0000001, not a rounded 1000000000).
            let given = lossBurst.map { $0 == $0.rounded() && abs($0) < 1e15 ? String(Int64($0)) : "\($0)" } ?? ""
            throw ValidationError("--loss-burst \(given): give \(LinkSettings.lossBurstsText)")
        case .sliceDelayWithoutSlice:
            throw ValidationError("--slice-delay needs --slice BYTES")
        case .sliceVariationWithoutSlice:
            throw ValidationError("--slice-variation needs --slice BYTES (the size it varies)")
        case .distributionWithoutJitter:
            throw ValidationError("--distribution shapes the jitter, and this link has none: add --jitter (or a --profile with jitter), or drop --distribution")
        case .sliceBelowOneByte:
            throw ValidationError("--slice must be at least 1 byte")
        case .traceAndBandwidth(let direction):
            throw ValidationError(traceAndBandwidth(direction))
        case .gilbertElliottLossOutOfReach(let direction, let loss, let meanBurst):
            let (reason, burst) = LinkSettings.outOfReach(loss: loss, meanBurst: meanBurst)
            let flag = direction.map { "--\($0)-loss" } ?? "--loss"
            throw ValidationError("\(flag) \(loss) is out of reach for --loss-model gilbert-elliott: \(reason); give --loss-burst \(burst) or more, or the chain itself with --ge-p and --ge-r")
        }
    }

    /// The flags as shared link settings: the same "profile + overrides" a scenario's `link:` block gives.
    var settings: LinkSettings {
        LinkSettings(
            profile: profile, latency: latency, jitter: jitter, distribution: distribution,
            bandwidth: bandwidth, loss: loss,
            up: .init(latency: upLatency, jitter: upJitter, bandwidth: upBandwidth, loss: upLoss, trace: traceUp),
            down: .init(latency: downLatency, jitter: downJitter, bandwidth: downBandwidth, loss: downLoss, trace: traceDown),
            lossModel: lossModel.map { $0 == .gilbertElliott ? .gilbertElliott : .bernoulli },
            lossBurst: lossBurst, geP: geP, geR: geR, geBadLoss: geBadLoss, geGoodLoss: geGoodLoss,
            slice: slice, sliceDelay: sliceDelay, sliceVariation: sliceVariation)
    }

    /// The profile (if any) with every explicit flag applied on top.
    func configuration() -> LinkConfiguration {
        settings.configuration()
    }
}

/// A trace is a direction's capacity: a bandwidth beside it means nothing.
func traceAndBandwidth(_ direction: Direction) -> String {
    "--trace-\(direction) is the link's capacity \(direction); drop --bandwidth/--\(direction)-bandwidth for that direction"
}
