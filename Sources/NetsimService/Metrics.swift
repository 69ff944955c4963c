import CoreMetrics
import Foundation
import NetsimCore
import NetsimRelay

/// Counts one proxy's traffic from its relays' event logs (attached as a sink, so nothing polls
/// the log and nothing is kept in memory) into swift-metrics handlers on a ``MetricsRegistry``.
/// Survives disabling and enabling the proxy; ``destroy()`` removes its series when the proxy goes.
/// Also the relay's ``DelayObserver``, for the added-latency histogram.
// `@unchecked Sendable`: `openedAt` and `faults` are behind the lock (sinks are called from every
// event loop); the handlers are thread-safe themselves.
public final class ProxyMetrics: EventSink, DelayObserver, @unchecked Sendable {
    private let proxy: String
    private let factory: any MetricsFactory
    private let bytesUp, bytesDown, connectionsTotal: Counter
    private let connectionsOpen: Meter
    private let latencyUp, latencyDown: CoreMetrics.Timer
    private let connectionDuration: CoreMetrics.Timer
    private let lock = NSLock()
    private var faults: [String: Counter] = [:]
    private var openedAt: [ConnectionID: Int64] = [:]
    /// The faults already counted on each open connection: a fault logs when it takes hold
    /// and again when it acts (a `limit` set up, then closing), and counts once.
    private var counted: [ConnectionID: Set<String>] = [:]

    /// - Parameter proxy: the `proxy` label of every series (the Toxiproxy proxy's name, or
    ///   `relay` for `netsim relay`).
    public init(proxy: String, registry: MetricsRegistry) {
        self.proxy = proxy
        let factory = registry.factory
        self.factory = factory
        let label = [("proxy", proxy)]
        bytesUp = Counter(label: MetricNames.bytes, dimensions: label + [("stream", "upstream")], factory: factory)
        bytesDown = Counter(label: MetricNames.bytes, dimensions: label + [("stream", "downstream")], factory: factory)
        connectionsTotal = Counter(label: MetricNames.connectionsTotal, dimensions: label, factory: factory)
        connectionsOpen = Meter(label: MetricNames.connectionsOpen, dimensions: label, factory: factory)
        latencyUp = CoreMetrics.Timer(label: MetricNames.addedLatency, dimensions: label + [("stream", "upstream")], factory: factory)
        latencyDown = CoreMetrics.Timer(label: MetricNames.addedLatency, dimensions: label + [("stream", "downstream")], factory: factory)
        connectionDuration = CoreMetrics.Timer(label: MetricNames.connectionDuration, dimensions: label, factory: factory)
    }

    public func receive(_ event: Event) {
        switch event.kind {
        case .bytes(.up, let n): bytesUp.increment(by: Int64(n))
        case .bytes(.down, let n): bytesDown.increment(by: Int64(n))
        case .opened:
            connectionsTotal.increment()
            connectionsOpen.increment()
            if let id = event.connection { lock.withLock { openedAt[id] = event.time } }
        case .closed:
            connectionsOpen.decrement()
            let opened = event.connection.flatMap { id in
                lock.withLock {
                    counted.removeValue(forKey: id)
                    return openedAt.removeValue(forKey: id)
                }
            }
            if let opened { connectionDuration.recordNanoseconds(event.time - opened) }
        case .faultFired(let fault, _):
            let first = event.connection.map { id in lock.withLock { counted[id, default: []].insert(fault.rawValue).inserted } } ?? true
            if first { faultCounter(fault.rawValue).increment() }
        default: break
        }
    }

    public func flush() {}

    public func delayed(_ nanoseconds: Int64, direction: Direction) {
        (direction == .up ? latencyUp : latencyDown).recordNanoseconds(nanoseconds)
    }

    /// Removes every series of this proxy from the registry (the proxy was deleted).
    public func destroy() {
        for handler in [bytesUp, bytesDown, connectionsTotal] { handler.destroy() }
        connectionsOpen.destroy()
        for timer in [latencyUp, latencyDown, connectionDuration] { timer.destroy() }
        lock.withLock {
            for counter in faults.values { counter.destroy() }
            faults.removeAll()
        }
    }

    private func faultCounter(_ kind: String) -> Counter {
        lock.withLock {
            if let counter = faults[kind] { return counter }
            let counter = Counter(label: MetricNames.faults, dimensions: [("proxy", proxy), ("kind", kind)], factory: factory)
            faults[kind] = counter
            return counter
        }
    }
}
