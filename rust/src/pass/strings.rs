//! The pass's string dictionaries: each distinct RWBS or comm gets the next small code, so the
//! rules compare integers and the rows carry codes until they are written.

use crate::hash::FastMap;

#[derive(Default)]
pub struct Dictionary {
    values: Vec<String>,
    codes: FastMap<String, u32>,
}

impl Dictionary {
    /// A dictionary whose first entries are `first`, in order.
    pub fn starting_with(first: &[&str]) -> Dictionary {
        let mut d = Dictionary::default();
        for value in first {
            d.code(value);
        }
        d
    }

    /// The code of `value`, given it if it is new.
    pub fn code(&mut self, value: &str) -> u32 {
        if let Some(&code) = self.codes.get(value) {
            return code;
        }
        let code = self.values.len() as u32;
        self.values.push(value.to_string());
        self.codes.insert(value.to_string(), code);
        code
    }

    pub fn value(&self, code: u32) -> &str {
        &self.values[code as usize]
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_keeps_its_first_code() {
        let mut d = Dictionary::starting_with(&["?"]);
        assert_eq!(d.code("fio"), 1);
        assert_eq!(d.code("?"), 0);
        assert_eq!(d.code("fio"), 1);
        assert_eq!(d.value(1), "fio");
    }
}
