//! Python objects made directly, where the general constructors do work the kernel's readers need not:
//! ASCII strings (nearly every key and value a vendor sends) and dicts whose size is known.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A Python `str` of `text`. ASCII (nearly every key and value) is copied into a compact string made
/// for it, which the general UTF-8 decoder behind `PyString::new` would check byte by byte first.
pub fn new_str<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    if text.len() > 1 && text.is_ascii() {
        if let Ok(len) = isize::try_from(text.len()) {
            // SAFETY: PyUnicode_New(len, 127) makes a compact ASCII string of `len` bytes (or NULL with an
            // error set); its data is written once, here, before anything else sees the object.
            unsafe {
                let made = ffi::PyUnicode_New(len, 127);
                if !made.is_null() {
                    let data = ffi::PyUnicode_DATA(made).cast::<u8>();
                    std::ptr::copy_nonoverlapping(text.as_ptr(), data, text.len());
                    return Bound::from_owned_ptr(py, made).cast_into_unchecked();
                }
                ffi::PyErr_Clear();
            }
        }
    }
    PyString::new(py, text)
}

/// An empty dict with room for `len` items: filled without the resizes a growing dict goes through
/// (a thirteen-column row resizes twice). Small ones are plain `PyDict::new`.
pub fn new_dict(py: Python<'_>, len: usize) -> Bound<'_, PyDict> {
    if len > 5 {
        if let Ok(len) = isize::try_from(len.min(1 << 16)) {
            // SAFETY: _PyDict_NewPresized returns a new empty dict (or NULL with an error set).
            unsafe {
                let made = ffi::_PyDict_NewPresized(len);
                if !made.is_null() {
                    return Bound::from_owned_ptr(py, made).cast_into_unchecked();
                }
                ffi::PyErr_Clear();
            }
        }
    }
    PyDict::new(py)
}
