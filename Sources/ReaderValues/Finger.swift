/// The ten fingers, as libfprint numbers them.
public enum Finger: Int32, CaseIterable, Sendable {
    case leftThumb = 1, leftIndex, leftMiddle, leftRing, leftLittle
    case rightThumb, rightIndex, rightMiddle, rightRing, rightLittle

    /// Names as fprintd spells them ("right-index-finger").
    public var name: String {
        switch self {
        case .leftThumb: return "left-thumb"
        case .leftIndex: return "left-index-finger"
        case .leftMiddle: return "left-middle-finger"
        case .leftRing: return "left-ring-finger"
        case .leftLittle: return "left-little-finger"
        case .rightThumb: return "right-thumb"
        case .rightIndex: return "right-index-finger"
        case .rightMiddle: return "right-middle-finger"
        case .rightRing: return "right-ring-finger"
        case .rightLittle: return "right-little-finger"
        }
    }

    public init?(name: String) {
        guard let finger = Finger.allCases.first(where: { $0.name == name }) else { return nil }
        self = finger
    }
}

/// A captured greyscale image.
public struct FingerprintImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// Row-major, one byte per pixel.
    public let pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        (self.width, self.height, self.pixels) = (width, height, pixels)
    }

    /// Binary PGM (P5).
    public func pgm() -> [UInt8] {
        Array("P5\n\(width) \(height)\n255\n".utf8) + pixels
    }
}
