/// The slicer stage, like Toxiproxy's `slicer` toxic: cuts each chunk into `sliceSize`-byte
/// pieces (each ± up to ``DirectionLink/sliceVariation``, drawn by ``DirectionShaper``) spaced
/// `sliceDelay` apart, so the far side sees many small, late reads.
///
/// Like Toxiproxy, which waits after every slice before reading the next chunk, the slicer is
/// sequential: a chunk that arrives while the previous one is still being sliced starts one
/// delay after that chunk's last slice. When idle, piece k of a chunk arriving at t goes at
/// t + k × sliceDelay.
struct Slicer: Sendable {
    /// The earliest time the next slice may go.
    private var nextSlice = Int64.min

    /// The time of the first slice of a chunk arriving at `arrival`.
    func firstSlice(arrivedAt arrival: Int64) -> Int64 {
        max(arrival, nextSlice)
    }

    /// Records that the last slice of a chunk went at `last`.
    mutating func finished(lastSliceAt last: Int64, sliceDelay: Int64) {
        nextSlice = last.addingSaturating(sliceDelay)
    }
}
