/// Decodes a chunked request body (RFC 9112 §7.1) incrementally, from whatever bytes have
/// arrived. Chunk extensions are skipped and trailer fields ignored.
struct ChunkedDecoder {
    enum Progress: Equatable {
        case needMore
        /// The last chunk and the trailer section have been consumed.
        case done
        case failed(RequestRejection)
    }

    private enum State {
        case size
        case chunkExtension
        case sizeLineFeed
        case data(remaining: Int)
        case dataEnd
        case dataLineFeed
        case trailer(lineLength: Int)
        case trailerLineFeed(lineLength: Int)
        case done
    }

    /// A size line longer than this (extensions included) is refused: nothing legitimate needs it.
    static let maxSizeLineBytes = 4096

    private let maxBodyBytes: Int
    private let maxTrailerBytes: Int
    private var state = State.size
    private var size = 0
    private var sawDigit = false
    private var sizeLineBytes = 0
    private var trailerBytes = 0

    init(maxBodyBytes: Int, maxTrailerBytes: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxTrailerBytes = maxTrailerBytes
    }

    /// Consumes from `input`, appending chunk data to `body`; `consumed` is set to the number
    /// of bytes used (all of them unless the body ended or failed inside `input`).
    mutating func decode(_ input: UnsafeBufferPointer<UInt8>, into body: inout [UInt8], consumed: inout Int) -> Progress {
        var index = 0
        defer { consumed = index }
        while index < input.count {
            let byte = input[index]
            switch state {
            case .size:
                if let failure = countSizeLineByte() { return .failed(failure) }
                if let digit = hexValue(byte) {
                    guard size <= (Int.max - Int(digit)) >> 4 else {
                        return .failed(RequestRejection(400, "Chunk size overflows."))
                    }
                    size = size << 4 | Int(digit)
                    sawDigit = true
                } else {
                    guard sawDigit else { return .failed(RequestRejection(400, "Invalid chunk size.")) }
                    switch byte {
                    case UInt8(ascii: ";"), UInt8(ascii: " "), UInt8(ascii: "\t"): state = .chunkExtension
                    case UInt8(ascii: "\r"): state = .sizeLineFeed
                    case UInt8(ascii: "\n"):
                        if let failure = endSizeLine(bodyCount: body.count) { return .failed(failure) }
                    default: return .failed(RequestRejection(400, "Invalid chunk size."))
                    }
                }
            case .chunkExtension:
                if let failure = countSizeLineByte() { return .failed(failure) }
                switch byte {
                case UInt8(ascii: "\r"): state = .sizeLineFeed
                case UInt8(ascii: "\n"):
                    if let failure = endSizeLine(bodyCount: body.count) { return .failed(failure) }
                case UInt8(ascii: "\t"), 0x20...0x7E, 0x80...0xFF: break
                default: return .failed(RequestRejection(400, "Invalid character in chunk extension."))
                }
            case .sizeLineFeed:
                guard byte == UInt8(ascii: "\n") else { return .failed(RequestRejection(400, "Bare CR in chunk size line.")) }
                if let failure = endSizeLine(bodyCount: body.count) { return .failed(failure) }
            case .data(let remaining):
                let count = min(remaining, input.count - index)
                body.append(contentsOf: UnsafeBufferPointer(rebasing: input[index..<index + count]))
                index += count
                state = remaining == count ? .dataEnd : .data(remaining: remaining - count)
                continue
            case .dataEnd:
                switch byte {
                case UInt8(ascii: "\r"): state = .dataLineFeed
                case UInt8(ascii: "\n"): state = .size
                default: return .failed(RequestRejection(400, "Chunk data is longer than its size."))
                }
            case .dataLineFeed:
                guard byte == UInt8(ascii: "\n") else { return .failed(RequestRejection(400, "Bare CR after chunk data.")) }
                state = .size
            case .trailer(let lineLength):
                switch byte {
                case UInt8(ascii: "\r"):
                    state = .trailerLineFeed(lineLength: lineLength)
                case UInt8(ascii: "\n"):
                    if lineLength == 0 {
                        state = .done
                        index += 1
                        return .done
                    }
                    state = .trailer(lineLength: 0)
                default:
                    trailerBytes += 1
                    guard trailerBytes <= maxTrailerBytes else {
                        return .failed(RequestRejection(431, "The trailer section is too large."))
                    }
                    state = .trailer(lineLength: lineLength + 1)
                }
            case .trailerLineFeed(let lineLength):
                guard byte == UInt8(ascii: "\n") else { return .failed(RequestRejection(400, "Bare CR in trailer section.")) }
                if lineLength == 0 {
                    state = .done
                    index += 1
                    return .done
                }
                state = .trailer(lineLength: 0)
            case .done:
                return .done
            }
            index += 1
        }
        if case .done = state { return .done }
        return .needMore
    }

    private mutating func countSizeLineByte() -> RequestRejection? {
        sizeLineBytes += 1
        return sizeLineBytes > Self.maxSizeLineBytes ? RequestRejection(400, "Chunk size line is too long.") : nil
    }

    /// Called at the LF that ends a size line.
    private mutating func endSizeLine(bodyCount: Int) -> RequestRejection? {
        defer {
            size = 0
            sawDigit = false
            sizeLineBytes = 0
        }
        if size == 0 {
            state = .trailer(lineLength: 0)
            return nil
        }
        guard size <= maxBodyBytes - bodyCount else {
            return RequestRejection(413, "The request body is larger than \(maxBodyBytes) bytes.")
        }
        state = .data(remaining: size)
        return nil
    }
}
