import NetsimCore

/// Receives the delay the link model adds to each chunk it holds back (latency, jitter, rate,
/// loss recovery), as it is scheduled. Not an event: a chunk per read would flood the event log,
/// and metrics only need a histogram. Called on the connection's event loop: be quick.
public protocol DelayObserver: AnyObject, Sendable {
    func delayed(_ nanoseconds: Int64, direction: Direction)
}
