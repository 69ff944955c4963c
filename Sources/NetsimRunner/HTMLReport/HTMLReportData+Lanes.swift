import NetsimCore

/// The grid byte events are summed on, so a run of any size draws from a bounded number of bins:
/// `bytes` events (the bulk of a busy log — one per read cycle) are decimated into it; every
/// other event stays a marker of its own, so no fault, FIN, RST or close is ever lost.
struct ByteDensity {
    /// Bins across all lanes together: a thousand connections get `budget / 1000` bins each.
    static let budget = 120_000
    /// A lane never gets fewer than this (a coarse but readable shape) nor more (screen width).
    static let minimumBins = 48, maximumBins = 600

    /// Nanoseconds per bin: whole microseconds, the page's unit, so bin edges drawn there are exact.
    let width: Int64

    init(end: Int64, lanes: Int) {
        let bins = Int64(min(Self.maximumBins, max(Self.minimumBins, Self.budget / max(1, lanes))))
        let microseconds = (end + bins * 1000 - 1) / (bins * 1000)
        width = max(1, microseconds) * 1000
    }

    func bin(_ time: Int64) -> Int { Int(max(0, time) / width) }
}

/// Sums bytes per bin for one lane. Events come in time order, so a bin is either the last one
/// or a new one after it; anything out of order is merged at the end.
struct LaneBins {
    private var bins: [Int] = []
    private var values: [[Int]] = []
    private let series: Int

    init(series: Int) { self.series = series }

    mutating func add(_ bin: Int, _ value: Int, series index: Int) {
        if bins.last != bin {
            bins.append(bin)
            values.append(Array(repeating: 0, count: series))
        }
        values[values.count - 1][index] += value
    }

    /// `[bin, value…, bin, value…]` in bin order, each bin once.
    var flattened: [Int] {
        var merged: [Int: [Int]] = [:]
        let ordered = zip(bins, bins.dropFirst()).allSatisfy { $0 < $1 }
        if !ordered {
            for (bin, value) in zip(bins, values) {
                merged[bin] = zip(merged[bin] ?? Array(repeating: 0, count: series), value).map { $0 + $1 }
            }
        }
        let pairs = ordered ? Array(zip(bins, values)) : merged.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return pairs.flatMap { [$0.0] + $0.1 }
    }
}

/// Sorts a run's events into swimlanes (one per relay connection) and the relay row.
struct LaneBuilder {
    private(set) var lanes: [HTMLReportData.Lane] = []
    private(set) var relay: [HTMLReportData.Mark] = []
    let density: ByteDensity

    init(events: [Event], end: Int64) {
        density = ByteDensity(end: end, lanes: Set(events.compactMap(\.connection)).count)
        var index: [ConnectionID: Int] = [:]
        var bytes: [LaneBins] = [], dropped: [LaneBins] = []
        for event in events {
            guard let id = event.connection else {
                if let mark = Self.mark(event) { relay.append(mark) }
                continue
            }
            let lane: Int
            if let known = index[id] {
                lane = known
            } else {
                lane = lanes.count
                index[id] = lane
                lanes.append(HTMLReportData.Lane(id: Int(id.raw), client: "", opened: micros(event.time), closed: nil, up: 0, down: 0, d: [], x: [], marks: []))
                bytes.append(LaneBins(series: 2))
                dropped.append(LaneBins(series: 1))
            }
            switch event.kind {
            case .opened(let client):
                lanes[lane].opened = micros(event.time)
                lanes[lane].client = client?.description ?? "unknown"
            case .bytes(let direction, let count):
                bytes[lane].add(density.bin(event.time), count, series: direction == .up ? 0 : 1)
            case .dropped(_, let count, _):
                dropped[lane].add(density.bin(event.time), count, series: 0)
            case .closed(_, _, let up, let down):
                lanes[lane].closed = micros(event.time)
                lanes[lane].up = up
                lanes[lane].down = down
            default:
                break
            }
            if let mark = Self.mark(event) { lanes[lane].marks.append(mark) }
        }
        for lane in lanes.indices {
            lanes[lane].d = bytes[lane].flattened
            lanes[lane].x = dropped[lane].flattened
        }
        // In accept order: a connection's first event may be logged after a later one's.
        lanes.sort { $0.id < $1.id }
    }

    /// The marker an event is drawn as; nil for what is drawn otherwise (bytes as density,
    /// steps on their row, the client's requests as bars).
    static func mark(_ event: Event) -> HTMLReportData.Mark? {
        let kind: String
        var side: String?
        switch event.kind {
        case .bytes, .dropped, .step, .requestStarted, .requestFinished, .seed: return nil
        case .opened: kind = "open"
        case .listening, .listenerClosed, .listenerPaused, .listenerResumed: kind = "listener"
        case .upstreamConnected: kind = "upstream"
        case .upstreamFailed: kind = "upfail"
        case .halfClosed(let by): (kind, side) = ("fin", by.rawValue)
        case .faultAdded: kind = "added"
        case .faultFired: kind = "fault"
        case .faultLifted: kind = "lifted"
        case .linkChanged: kind = "link"
        case .httpRequest: kind = "req"
        case .httpResponse(let status, _, _, _): (kind, side) = ("resp", "\(status / 100)xx")
        case .httpUnobserved: kind = "unobserved"
        case .dnsQuery, .dnsAnswer: kind = "dns"
        case .path: kind = "path"
        case .closed(let by, let how, _, _): (kind, side) = (how == .rst ? "rst" : "end", by.rawValue)
        }
        return HTMLReportData.Mark(t: micros(event.time), k: kind, s: side, text: TimelineText.text(event.kind))
    }
}
