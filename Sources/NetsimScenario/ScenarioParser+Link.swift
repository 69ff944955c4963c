import Yams
import NetsimCore
import NetsimLink

extension Validator {
    static let gilbertElliottKeys = ["loss_burst", "ge_p", "ge_r", "ge_bad_loss", "ge_good_loss"]
    static let linkKeys = [
        "profile", "latency", "jitter", "distribution", "bandwidth", "loss", "loss_model",
    ] + gilbertElliottKeys + ["slice", "slice_delay", "slice_variation", "trace", "up", "down", "mode"] + PacketLinkSettings.keys
    static let directionKeys = ["latency", "jitter", "bandwidth", "loss"] + PacketLinkSettings.keys

    /// `link: { tls: passthrough | intercept }` of the scenario's baseline link: whether the relay
    /// intercepts TLS. Intercepting needs an upstream that speaks TLS.
    func linkTLS(_ entry: Entry, upstream: UpstreamSpec?) -> Bool? {
        // Read quietly: the mapping's own problems are reported once, by `link(_:step:)`.
        guard case .mapping(let pairs) = entry.value, let (keyNode, value) = pairs.first(where: { $0.key.string == "tls" }) else { return false }
        let tls = Entry(key: "tls", keyNode: keyNode, value: value, keyLocation: location(keyNode),
                        valueLocation: value.isNull ? location(keyNode) : location(value))
        guard let mode = choice(tls, what: "TLS mode", options: [("passthrough", false), ("intercept", true)], normalize: { $0.lowercased() }) else { return nil }
        guard mode, let upstream else { return mode }
        switch upstream {
        case .builtin(_, _, let wire) where !wire.tls:
            error(tls.valueLocation, "'tls: intercept' needs an upstream that speaks TLS, and the built-in server here speaks plaintext",
                  hint: "add 'tls: true' to 'upstream'")
            return nil
        case .replay:
            error(tls.valueLocation, "'tls: intercept' cannot be used with a replayed upstream (a capture replays its bytes as they were)")
            return nil
        default:
            return mode
        }
    }

    /// A `link:` block (the scenario's baseline, or a timeline step's replacement): a profile
    /// plus overrides, meaning exactly what `netsim relay`'s flags mean.
    /// `step` is the timeline step's number for a step's link, nil for the scenario's.
    func link(_ entry: Entry, step: Int? = nil) -> LinkConfiguration? {
        let suffix = step.map { " of timeline step \($0)" } ?? ""
        guard let map = mapping(entry, place: "'link'" + suffix) else { return nil }
        let errorsBefore = errorCount
        rejectUnknownKeys(map, allowed: Self.linkKeys, suggestions: Self.linkKeys + (step == nil ? ["tls"] : []), skipping: ["tls"])
        if step != nil, let tls = map["tls"] {
            error(tls.keyLocation, "'tls' is set once, in the scenario's 'link'; a timeline step cannot change interception",
                  hint: "move 'tls: intercept' to the top-level 'link'")
        }
        if step == nil {
            readMode(map)
        } else if let e = map["mode"] {
            error(e.keyLocation, "the link mode is set once, in the scenario's 'link'", hint: "move 'mode' to the top-level 'link'")
        }
        var packet = PacketLinkSettings()
        packet.both = packetSettings(map, step: step)
        var settings = LinkSettings()
        /// Keys whose value did not parse: problems involving them would only repeat the error.
        var failed: Set<String> = []
        var lossEntries: [Direction: Entry] = [:]
        func read<T>(_ key: String, _ reader: (Entry) -> T?) -> T? {
            guard let e = map[key] else { return nil }
            let value = reader(e)
            if value == nil { failed.insert(key) }
            return value
        }
        settings.profile = read("profile") { e in
            guard let raw = self.scalar(e, expected: "a profile name") else { return nil }
            if let profile = LinkProfile.named(raw) {
                // Its DNS delay needs a resolver the client uses, which the relay is not.
                if profile.dnsDelay != nil, step != nil || self.linkMode != .packet {
                    self.error(e.valueLocation, "profile '\(profile.name)' delays DNS answers; \(Self.dnsNeedsResolver)"
                        + (step == nil ? "" : ", set in the scenario's 'link'"), hint: Self.dnsNeedsResolverHint)
                }
                if step == nil { self.profileDNSDelay = profile.dnsDelay.map { (delay: $0, location: e.valueLocation) } }
                return profile
            }
            self.error(e.valueLocation, "unknown profile '\(raw)'",
                       hint: self.suggestionHint(raw, among: LinkProfile.all.map(\.name), listing: "profiles"))
            return nil
        }
        settings.latency = read("latency", duration)
        settings.jitter = read("jitter", duration)
        settings.distribution = read("distribution") { e in
            self.choice(e, what: "distribution", options: JitterDistribution.allCases.map { ($0.rawValue, $0) }, normalize: { $0.lowercased() })
        }
        settings.bandwidth = read("bandwidth", rate)
        settings.loss = read("loss", probability)
        settings.lossModel = read("loss_model") { e in
            self.choice(e, what: "loss model", options: LinkSettings.LossModelKind.allCases.map { ($0.rawValue, $0) }, normalize: { $0.lowercased() })
        }
        settings.lossBurst = read("loss_burst") { e in
            self.number(e, expected: LinkSettings.lossBurstsText, isValid: LinkSettings.lossBursts.contains)
        }
        settings.geP = read("ge_p", probability)
        settings.geR = read("ge_r", probability)
        settings.geBadLoss = read("ge_bad_loss", probability)
        settings.geGoodLoss = read("ge_good_loss", probability)
        settings.slice = read("slice") { e in
            guard let count = self.byteCount(e) else { return nil }
            guard count.bytes >= 1 else {
                self.error(e.valueLocation, "'slice' must be at least 1 byte")
                return nil
            }
            return count
        }
        settings.sliceDelay = read("slice_delay", duration)
        settings.sliceVariation = read("slice_variation", byteCount)
        for direction in Direction.allCases {
            guard let e = map[direction.rawValue] else { continue }
            guard let sub = mapping(e, place: "'link.\(direction.rawValue)'" + suffix) else { continue }
            rejectUnknownKeys(sub, allowed: Self.directionKeys, suggestions: Self.directionKeys)
            if direction == .up { packet.up = packetSettings(sub, step: step) } else { packet.down = packetSettings(sub, step: step) }
            var own = LinkSettings.DirectionSettings()
            if let v = sub["latency"] { own.latency = duration(v) }
            if let v = sub["jitter"] { own.jitter = duration(v) }
            if let v = sub["bandwidth"] { own.bandwidth = rate(v) }
            if let v = sub["loss"] {
                lossEntries[direction] = v
                own.loss = probability(v)
                if own.loss == nil { failed.insert("loss") }
            }
            settings[direction] = own
        }
        if let e = map["trace"] {
            let traces = self.traces(e, place: "'link.trace'" + suffix)
            if traces == nil { failed.insert("trace") }
            for (direction, trace) in traces ?? [:] { settings[direction].trace = trace }
        }

        for problem in settings.problems {
            report(problem, in: map, failed: failed, lossEntries: lossEntries)
        }
        if step == nil {
            packetLink = packet
            checkPacketLink(map, settings: settings, failed: failed)
        }
        return errorCount == errorsBefore ? settings.configuration() : nil
    }

    /// `trace: { down: FILE, up: FILE }`: recorded links in Mahimahi's format, found as
    /// ``ScenarioPaths`` finds files (beside the scenario first), read now so that a bad file is
    /// the scenario's error with its place.
    private func traces(_ entry: Entry, place: String) -> [Direction: DeliveryTrace]? {
        guard let map = mapping(entry, place: place) else { return nil }
        rejectUnknownKeys(map, allowed: ["up", "down"], suggestions: ["up", "down"])
        var found: [Direction: DeliveryTrace] = [:]
        var ok = true
        for direction in Direction.allCases {
            guard let e = map[direction.rawValue], let path = scalar(e, expected: "a trace file (Mahimahi's format)") else { continue }
            do {
                found[direction] = try DeliveryTrace(contentsOf: ScenarioPaths.resolve(path, scenarioFile: file), name: path)
            } catch let problem {
                error(e.valueLocation, "cannot use the trace: \(problem)",
                      hint: "a path relative to the scenario file (or a folder above it), e.g. Fixtures/traces/mahimahi/Verizon-LTE-short.\(direction.rawValue)")
                ok = false
            }
        }
        if map.keys.isEmpty {
            error(entry.keyLocation, "'trace' needs 'up', 'down' or both", hint: "trace: { down: Fixtures/traces/mahimahi/Verizon-LTE-short.down }")
            ok = false
        }
        return ok ? found : nil
    }

    /// - Parameter lossEntries: each direction's own `loss`, where a problem with it is shown.
    private func report(_ problem: LinkSettings.Problem, in map: Mapping, failed: Set<String>, lossEntries: [Direction: Entry]) {
        switch problem {
        case .gilbertElliottParametersWithoutModel:
            guard !failed.contains("loss_model"), let first = map.entries.first(where: { Self.gilbertElliottKeys.contains($0.key) }) else { return }
            error(first.keyLocation, "'\(first.key)' needs 'loss_model: gilbert-elliott'",
                  hint: "loss_burst, ge_p, ge_r, ge_bad_loss and ge_good_loss describe the bursty gilbert-elliott loss model")
        case .gilbertElliottWithoutLoss:
            guard failed.isDisjoint(with: ["loss", "ge_p", "ge_r"]), let model = map["loss_model"] else { return }
            error(model.keyLocation, "'loss_model: gilbert-elliott' needs 'loss' (the average loss) or 'ge_p' and 'ge_r'",
                  hint: "for example: loss: 2% with loss_burst: 4")
        case .gilbertElliottPWithoutR:
            guard failed.isDisjoint(with: ["ge_p", "ge_r"]) else { return }
            if let p = map["ge_p"] {
                error(p.keyLocation, "'ge_p' needs 'ge_r' too", hint: "ge_r is the chance per segment of going from the bad state back to good, e.g. 25%")
            } else if let r = map["ge_r"] {
                error(r.keyLocation, "'ge_r' needs 'ge_p' too", hint: "ge_p is the chance per segment of going from the good state to bad, e.g. 1%")
            }
        case .lossBurstOutOfRange, .sliceBelowOneByte:
            break  // reported when the value was read
        case .traceAndBandwidth(let direction):
            guard !failed.contains("trace"), let trace = map["trace"] else { return }
            error(trace.keyLocation, "a trace is the link's capacity \(direction); 'bandwidth' for that direction means nothing beside it",
                  hint: "drop 'bandwidth' (or '\(direction): { bandwidth: … }'); a profile's bandwidth is replaced by the trace by itself")
        case .gilbertElliottLossOutOfReach(let direction, let loss, let meanBurst):
            guard failed.isDisjoint(with: ["loss_model", "loss_burst"]) else { return }
            let entry = direction.map { lossEntries[$0] } ?? map["loss"]
            guard let entry else { return }
            let (reason, burst) = LinkSettings.outOfReach(loss: loss, meanBurst: meanBurst)
            error(entry.valueLocation, "a loss of \(loss) is out of reach for 'loss_model: gilbert-elliott': \(reason)",
                  hint: "loss_burst: \(burst) or more makes bursts long enough; or give the chain itself with ge_p and ge_r")
        case .sliceDelayWithoutSlice:
            guard !failed.contains("slice"), let delay = map["slice_delay"] else { return }
            error(delay.keyLocation, "'slice_delay' needs 'slice' (the slice size in bytes)", hint: "for example: slice: 100 with slice_delay: 10ms")
        case .sliceVariationWithoutSlice:
            guard !failed.contains("slice"), let variation = map["slice_variation"] else { return }
            error(variation.keyLocation, "'slice_variation' needs 'slice' (the slice size it varies)", hint: "for example: slice: 100 with slice_variation: 50")
        case .distributionWithoutJitter:
            guard !failed.contains("jitter"), let distribution = map["distribution"] else { return }
            error(distribution.keyLocation, "'distribution' shapes the jitter, and this link has none", hint: "add jitter: 10ms (or a profile with jitter), or drop 'distribution'")
        }
    }

    /// Why the `h2:` faults (`goaway`, `rst-stream`, `max-streams`) could never act in this
    /// scenario, with a hint; nil when they can. They act on the HTTP/2 the relay intercepts: the
    /// link must intercept TLS, and the relay offers clients h2 only when the built-in server
    /// speaks it (QA 57: `goaway` over a passthrough link passed `check` and `run` and did nothing).
    /// Whether the client speaks h2 is the client's choice (a matrix runs HTTP/1.1 clients too).
    static func whyNoHTTP2(upstream: UpstreamSpec, interceptTLS: Bool) -> (why: String, hint: String)? {
        guard interceptTLS else {
            return ("this scenario's link does not intercept TLS",
                    "add 'tls: intercept' to the scenario's 'link' (its upstream must speak TLS: 'tls: true')")
        }
        if !upstream.protocolsOfferedWhenIntercepted.contains(.http2) {
            return ("the built-in server speaks only HTTP/1.1 here, so the relay offers clients no h2",
                    "add h2 to the upstream's 'http': http: [h2, http/1.1]")
        }
        return nil
    }
}
