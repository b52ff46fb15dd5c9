import ArtCacheCore
import Foundation

/// Limits checked from the image header before any pixel is decoded.
package struct RenderLimits: Sendable, Equatable {
    /// Width × height of the frame a still is made from.
    package var maxSourcePixels: Int
    /// An animation with more frames, or more pixels in all its frames
    /// (width × height × frames), gives its first frame (a still), never an error.
    package var maxFrames: Int
    package var maxAnimationPixels: Int
    package var maxOutput: Int

    package init(maxSourcePixels: Int = 50_000_000, maxFrames: Int = 100, maxAnimationPixels: Int = 50_000_000,
                 maxOutput: Int = 4096) {
        self.maxSourcePixels = maxSourcePixels
        self.maxFrames = maxFrames
        self.maxAnimationPixels = maxAnimationPixels
        self.maxOutput = maxOutput
    }

    /// Whether an animation of `header`'s frames is rendered animated.
    package func animates(_ header: ImageHeader) -> Bool {
        header.frames > 1 && header.frames <= maxFrames && header.pixels <= maxAnimationPixels
    }
}

