import CGtk

/// GTK's C casts (GTK_WINDOW(w), GTK_LABEL(w)…) are macros: these are the same pointer, typed
/// for the function called. Only for widgets made here, whose real type is known.
typealias Widget = UnsafeMutablePointer<GtkWidget>

extension UnsafeMutablePointer where Pointee == GtkWidget {
    var window: UnsafeMutablePointer<GtkWindow> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GtkWindow.self) }
    var button: UnsafeMutablePointer<GtkButton> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GtkButton.self) }
    var box: UnsafeMutablePointer<GtkBox> { UnsafeMutableRawPointer(self).assumingMemoryBound(to: GtkBox.self) }
    /// Types whose struct GTK keeps private (GtkLabel, GtkEditable, GtkNative…).
    var opaque: OpaquePointer { OpaquePointer(self) }
    var raw: UnsafeMutableRawPointer { UnsafeMutableRawPointer(self) }
}
