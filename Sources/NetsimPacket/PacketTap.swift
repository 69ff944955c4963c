/// Sees every packet that crosses the namespace's interface, as a capture there would: what CMD
/// sent (before the filter and the link) and what reaches CMD (after them).
///
/// Called on the packet path's own thread, one packet at a time, in time order.
public protocol PacketTap: AnyObject {
    /// `packet` is a whole IP packet; `wallNanoseconds` is the wall-clock time since the Unix epoch.
    func record(_ packet: UnsafeRawBufferPointer, wallNanoseconds: Int64)
    /// The path stopped: write out what is buffered.
    func finish()
}
