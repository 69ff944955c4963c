import NetsimCore
import NetsimLink

/// A link as a person describes it: an optional named profile plus explicit settings that
/// override it, some per direction. `netsim relay`'s flags and a scenario's `link:` block both
/// fill one of these, so the two mean exactly the same thing.
public struct LinkSettings: Sendable {
    /// Settings that may differ per direction (`--up-latency`, `up: { latency: … }`).
    public struct DirectionSettings: Sendable, Equatable {
        public var latency: Duration?
        public var jitter: Duration?
        public var bandwidth: DataRate?
        public var loss: Probability?
        /// A recorded link's capacity in this direction (`--trace-up`, `trace: { up: … }`), in
        /// place of a bandwidth: it replaces the profile's.
        public var trace: DeliveryTrace?

        public init(latency: Duration? = nil, jitter: Duration? = nil, bandwidth: DataRate? = nil, loss: Probability? = nil,
                    trace: DeliveryTrace? = nil) {
            self.trace = trace
            self.latency = latency
            self.jitter = jitter
            self.bandwidth = bandwidth
            self.loss = loss
        }
    }

    /// `bernoulli` or `gilbert-elliott`.
    public enum LossModelKind: String, Sendable, CaseIterable {
        case bernoulli
        case gilbertElliott = "gilbert-elliott"
    }

    /// A combination that cannot mean anything. Each front end words it with its own spellings
    /// (`--ge-p` on the command line, `ge_p` in a scenario).
    public enum Problem: Equatable, Sendable {
        /// loss burst or a GE parameter given without the gilbert-elliott loss model.
        case gilbertElliottParametersWithoutModel
        /// gilbert-elliott with neither an average loss nor p and r.
        case gilbertElliottWithoutLoss
        /// Only one of GE p and r.
        case gilbertElliottPWithoutR
        /// A mean burst length outside ``LinkSettings/lossBursts`` (infinity too: it ran as 1, and
        /// 1e308 as a chain that never left the good state; QA 49).
        case lossBurstOutOfRange
        /// A slice delay without a slice size.
        case sliceDelayWithoutSlice
        /// A slice variation without a slice size.
        case sliceVariationWithoutSlice
        /// A jitter distribution with no jitter to shape (the link's, or its profile's): it did
        /// nothing, and nothing said so (QA 56).
        case distributionWithoutJitter
        /// A slice size of zero.
        case sliceBelowOneByte
        /// A trace and an explicit bandwidth for the same direction: the trace is the capacity.
        case traceAndBandwidth(Direction)
        /// A gilbert-elliott average loss above what its mean burst reaches (QA 46: 99.9999%
        /// with the default burst of 4 gave 80%, said only in the banner): the both-ways `loss`
        /// (nil) or a direction's. The burst is the one in force (the default 4 when not given).
        case gilbertElliottLossOutOfReach(Direction?, loss: Probability, meanBurst: Double)
    }

    /// Why a ``Problem/gilbertElliottLossOutOfReach(_:loss:meanBurst:)`` cannot be had, and the
    /// shortest mean burst that has it, for each front end to put in its own spellings.
    public static func outOfReach(loss: Probability, meanBurst: Double) -> (reason: String, burst: String) {
        // Rounded down, with the digits it takes to stay under the loss asked for (98/99 is not
        // "98.99%" beside a request of 98.99%).
        let most = LossModel.highestBurstyLoss(meanBurst: meanBurst) * 100
        var (digits, scale) = (3, 1000.0)
        while (most * scale).rounded(.down) / scale >= loss.fraction * 100, digits < 9 { (digits, scale) = (digits + 1, scale * 10) }
        let limit = trimmingFractionZeros(String(format: "%.\(digits)f", (most * scale).rounded(.down) / scale)) + "%"
        let segments = meanBurst == 1 ? "segment" : "segments"
        let reason = "with bursts \(formatTrimmed(meanBurst)) \(segments) long on average, at most \(limit) is lost (a good segment comes between bursts)"
        return (reason, formatTrimmed(LossModel.burstReaching(loss)))
    }

    public var profile: LinkProfile?
    /// Both directions unless a direction's own setting says otherwise.
    public var latency: Duration?
    public var jitter: Duration?
    public var distribution: JitterDistribution?
    public var bandwidth: DataRate?
    public var loss: Probability?
    public var up: DirectionSettings
    public var down: DirectionSettings
    public var lossModel: LossModelKind?
    /// gilbert-elliott: mean burst length in segments (default ``defaultLossBurst``), with the
    /// average loss from `loss`.
    public var lossBurst: Double?
    /// The mean burst when `lossBurst` is not given: 4 segments.
    public static let defaultLossBurst = 4.0
    /// The mean bursts a chain can be built for: from one segment to a billion (a longer one
    /// makes p too small for a double to tell from 0).
    public static let lossBursts = 1.0...1e9
    /// ``lossBursts`` in words, for both front ends' messages.
    public static let lossBurstsText = "a mean number of segments, from 1 to \(formatTrimmed(lossBursts.upperBound))"
    public var geP: Probability?
    public var geR: Probability?
    public var geBadLoss: Probability?
    public var geGoodLoss: Probability?
    public var slice: ByteCount?
    public var sliceDelay: Duration?
    /// Each slice is `slice` ± up to this (Toxiproxy's slicer `size_variation`).
    public var sliceVariation: ByteCount?

    public init(
        profile: LinkProfile? = nil, latency: Duration? = nil, jitter: Duration? = nil,
        distribution: JitterDistribution? = nil, bandwidth: DataRate? = nil, loss: Probability? = nil,
        up: DirectionSettings = .init(), down: DirectionSettings = .init(),
        lossModel: LossModelKind? = nil, lossBurst: Double? = nil,
        geP: Probability? = nil, geR: Probability? = nil, geBadLoss: Probability? = nil, geGoodLoss: Probability? = nil,
        slice: ByteCount? = nil, sliceDelay: Duration? = nil, sliceVariation: ByteCount? = nil
    ) {
        self.profile = profile
        self.latency = latency
        self.jitter = jitter
        self.distribution = distribution
        self.bandwidth = bandwidth
        self.loss = loss
        self.up = up
        self.down = down
        self.lossModel = lossModel
        self.lossBurst = lossBurst
        self.geP = geP
        self.geR = geR
        self.geBadLoss = geBadLoss
        self.geGoodLoss = geGoodLoss
        self.slice = slice
        self.sliceDelay = sliceDelay
        self.sliceVariation = sliceVariation
    }

    public subscript(direction: Direction) -> DirectionSettings {
        get { direction == .up ? up : down }
        set {
            if direction == .up { up = newValue } else { down = newValue }
        }
    }

    /// Every problem, in a fixed order (the command line reports the first).
    public var problems: [Problem] {
        var found: [Problem] = []
        let geGiven = geP != nil || geR != nil || geBadLoss != nil || geGoodLoss != nil || lossBurst != nil
        if geGiven, lossModel != .gilbertElliott { found.append(.gilbertElliottParametersWithoutModel) }
        if lossModel == .gilbertElliott, geP == nil, loss == nil, up.loss == nil, down.loss == nil, profileLoss(.up) == nil, profileLoss(.down) == nil {
            found.append(.gilbertElliottWithoutLoss)
        }
        if (geP == nil) != (geR == nil) { found.append(.gilbertElliottPWithoutR) }
        if let lossBurst, !Self.lossBursts.contains(lossBurst) { found.append(.lossBurstOutOfRange) }
        if lossModel == .gilbertElliott, geP == nil, geR == nil, lossBurst.map(Self.lossBursts.contains) ?? true {
            let burst = lossBurst ?? Self.defaultLossBurst
            let most = LossModel.highestBurstyLoss(meanBurst: burst)
            // The both-ways loss is not used where both directions give their own (QA 49).
            let bothWays = up.loss != nil && down.loss != nil ? nil : loss
            for (direction, given) in [(nil, bothWays), (Direction.up, up.loss), (.down, down.loss)] {
                // 100% is reached (the chain stays bad); the tolerance keeps exactly 80% with 4 in.
                if let given, given.fraction < 1, given.fraction > most * (1 + 1e-12) {
                    found.append(.gilbertElliottLossOutOfReach(direction, loss: given, meanBurst: burst))
                }
            }
        }
        if sliceDelay != nil, slice == nil { found.append(.sliceDelayWithoutSlice) }
        if sliceVariation != nil, slice == nil { found.append(.sliceVariationWithoutSlice) }
        if distribution != nil, jitter == nil, up.jitter == nil, down.jitter == nil,
           Direction.allCases.allSatisfy({ (profile?.link[$0].jitter ?? .zero) <= .zero }) {
            found.append(.distributionWithoutJitter)
        }
        if let slice, slice.bytes < 1 { found.append(.sliceBelowOneByte) }
        for direction in Direction.allCases where self[direction].trace != nil && (self[direction].bandwidth ?? bandwidth) != nil {
            found.append(.traceAndBandwidth(direction))
        }
        return found
    }

    /// The profile (if any) with every explicit setting applied on top; a direction's own
    /// setting wins over the both-ways one. A 0% loss means no loss model.
    public func configuration() -> LinkConfiguration {
        var link = profile?.link ?? .unimpaired
        for direction in Direction.allCases {
            var d = link[direction]
            let own = self[direction]
            if let v = own.latency ?? latency { d.latency = v }
            if let v = own.jitter ?? jitter { d.jitter = v }
            if let distribution { d.distribution = distribution }
            if let v = own.bandwidth ?? bandwidth { d.bandwidth = v }
            if let trace = own.trace {
                d.trace = trace
                d.bandwidth = nil
            }
            // Bursty loss on a profile's own: its average (QA 56: refused as if none were given).
            let profiles = lossModel == .gilbertElliott && geP == nil ? profileLoss(direction) : nil
            if let model = lossModel(for: own.loss ?? loss ?? profiles) { d.loss = model }
            if let slice {
                d.sliceSize = slice.bytes
                d.sliceDelay = sliceDelay ?? .zero
                d.sliceVariation = sliceVariation?.bytes ?? 0
            }
            link[direction] = d
        }
        return link
    }

    /// The profile's average loss in `direction`, if it has one.
    private func profileLoss(_ direction: Direction) -> Probability? {
        guard let model = profile?.link[direction].loss, model.averageLoss > 0 else { return nil }
        return Probability(fraction: model.averageLoss)
    }

    /// nil: leave the profile's loss alone; .some(nil): no loss; .some(model): this model.
    private func lossModel(for probability: Probability?) -> LossModel?? {
        if lossModel == .gilbertElliott {
            if let geP, let geR {
                return .some(.gilbertElliott(p: geP, r: geR, badLoss: geBadLoss ?? .certain, goodLoss: geGoodLoss ?? .zero))
            }
            guard let probability else { return nil }
            return .some(probability.fraction == 0 ? nil : LossModel.gilbertElliott(averageLoss: probability, meanBurst: lossBurst ?? Self.defaultLossBurst))
        }
        guard let probability else { return nil }
        return .some(probability.fraction == 0 ? nil : .bernoulli(probability))
    }
}
