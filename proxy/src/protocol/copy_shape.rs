//! What a CopyInResponse or CopyOutResponse announces of its COPY: the
//! overall format and the number of columns (read from the body; the
//! per-column formats that follow repeat the overall one for COPY).

/// A COPY's format and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyShape {
    pub binary: bool,
    pub columns: u16,
}

impl CopyShape {
    /// The shape a response body (after tag and length) announces; `None`
    /// when the body is too short to say.
    pub fn read(body: &[u8]) -> Option<CopyShape> {
        match *body {
            [format, high, low, ..] => Some(CopyShape {
                binary: format != 0,
                columns: u16::from_be_bytes([high, low]),
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for CopyShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let format = if self.binary { "binary" } else { "text" };
        write!(f, "{} columns in {format} format", self.columns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_from_bodies() {
        // Binary, 3 columns, each binary.
        let binary = [1, 0, 3, 0, 1, 0, 1, 0, 1];
        let shape = CopyShape::read(&binary).unwrap();
        assert_eq!(
            shape,
            CopyShape {
                binary: true,
                columns: 3
            }
        );
        assert_eq!(shape.to_string(), "3 columns in binary format");
        assert_eq!(
            CopyShape::read(&[0, 1, 2]),
            Some(CopyShape {
                binary: false,
                columns: 258
            })
        );
        // Truncated bodies say nothing.
        assert_eq!(CopyShape::read(&[1, 0]), None);
        assert_eq!(CopyShape::read(&[]), None);
    }
}
