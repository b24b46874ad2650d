//! Arrow to and from Python through the Arrow C data interface (the PyCapsule protocol):
//! pyarrow takes the buffers Rust built, and Rust reads pyarrow's, without a copy either way.

use std::ffi::CString;

use arrow_array::ffi::{from_ffi, to_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{make_array, Array, ArrayRef, PrimitiveArray, StructArray};
use arrow_data::ArrayData;
use arrow_schema::{Field, Fields};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

/// Named columns of equal length, handed to Python as one struct array: `pa.record_batch(cols)`
/// imports them (pyarrow calls `__arrow_c_array__`).
#[pyclass(frozen, module = "blkscope._core")]
pub struct ArrowColumns {
    data: ArrayData,
}

impl ArrowColumns {
    /// Columns by name; every one non-nullable in the struct's own type, since the Python side
    /// puts them under the declared schema (schemas/), which says what may be null.
    pub fn new(columns: Vec<(&str, ArrayRef)>) -> ArrowColumns {
        let fields: Fields = columns
            .iter()
            .map(|(name, array)| Field::new(*name, array.data_type().clone(), true))
            .collect();
        let arrays = columns.into_iter().map(|(_, a)| a).collect();
        let rows = StructArray::new(fields, arrays, None);
        ArrowColumns {
            data: rows.into_data(),
        }
    }
}

#[pymethods]
impl ArrowColumns {
    /// The Arrow PyCapsule protocol: (schema capsule, array capsule). A requested schema is
    /// not honoured: the columns already have the types the Python side declares.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let (array, schema) =
            to_ffi(&self.data).map_err(|e| PyValueError::new_err(e.to_string()))?;
        // A capsule drops its struct when Python frees it: the release callback runs then,
        // unless pyarrow has moved the struct out (which leaves it released).
        let schema = PyCapsule::new(py, schema, Some(CString::from(c"arrow_schema")))?;
        let array = PyCapsule::new(py, array, Some(CString::from(c"arrow_array")))?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    /// How many rows the columns hold.
    #[getter]
    fn num_rows(&self) -> usize {
        self.data.len()
    }
}

/// Read an array of primitive type T from any Python object that exports one (a pyarrow
/// Array, or `pa.array(numpy_array)`), sharing its buffers.
pub fn import_primitive<T: ArrowPrimitiveType>(
    obj: &Bound<'_, PyAny>,
) -> PyResult<PrimitiveArray<T>> {
    let capsules = obj.call_method0("__arrow_c_array__").map_err(|_| {
        PyTypeError::new_err("expected an Arrow array (an object with __arrow_c_array__)")
    })?;
    let (schema, array): (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>) = capsules.extract()?;
    let schema_ptr = schema.pointer_checked(Some(c"arrow_schema"))?;
    let array_ptr = array.pointer_checked(Some(c"arrow_array"))?;
    // SAFETY: the capsule names promise these structs (the PyCapsule protocol); from_raw moves
    // the array out and marks the capsule's copy released, so it is released exactly once.
    let data = unsafe {
        let schema = &*(schema_ptr.as_ptr() as *const FFI_ArrowSchema);
        let array = FFI_ArrowArray::from_raw(array_ptr.as_ptr() as *mut FFI_ArrowArray);
        from_ffi(array, schema)
    }
    .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array: ArrayRef = make_array(data);
    if array.data_type() != &T::DATA_TYPE {
        return Err(PyTypeError::new_err(format!(
            "expected an Arrow array of {}, got {}",
            T::DATA_TYPE,
            array.data_type()
        )));
    }
    if array.null_count() != 0 {
        return Err(PyValueError::new_err(
            "expected an Arrow array without nulls",
        ));
    }
    Ok(array
        .as_any()
        .downcast_ref::<PrimitiveArray<T>>()
        .expect("checked the type above")
        .clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn columns_keep_their_names_and_rows() {
        let cols = ArrowColumns::new(vec![
            ("a", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
            ("b", Arc::new(StringArray::from(vec!["x", "y"])) as ArrayRef),
        ]);
        assert_eq!(cols.data.len(), 2);
        let rows = StructArray::from(cols.data.clone());
        assert_eq!(rows.column_names(), vec!["a", "b"]);
    }

    #[test]
    fn exported_columns_import_back() {
        let (array, schema) = to_ffi(&Int64Array::from(vec![7, 8, 9]).into_data()).unwrap();
        let back = unsafe { from_ffi(array, &schema) }.unwrap();
        assert_eq!(Int64Array::from(back).values().to_vec(), vec![7, 8, 9]);
    }
}
