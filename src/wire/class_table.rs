//! The kernel classes as one table: each class's JSON key, its label, the built-in
//! categories whose kernels it holds and what its floor is priced with. Every array,
//! report column, chart colour, baseline metric and category lookup reads this table, so
//! a new class is one variant of [`KernelClass`], one row here, one row of
//! `attribution::class_rules` (its floor and its action: behaviour, which this leaf module
//! cannot name) and its category rules in `categories` (families of
//! `categories::families`). The table's order is the report order and the enum's order:
//! row `i` is the class whose discriminant is `i`, so
//! `class as usize` indexes class-sized arrays. A throwaway `probe` class exists in test
//! builds only, one row here and one there, to prove it.

use super::attribution::KernelClass;

/// One kernel class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassRow {
    pub class: KernelClass,
    /// The JSON value and column-name prefix (`weights`, `kv_write`, …).
    pub key: &'static str,
    /// What the reports call it.
    pub label: &'static str,
    /// The built-in categories (`categories`) whose kernels the class holds.
    pub categories: &'static [&'static str],
    /// The bytes its floor is priced with (docs/method.md §4.1).
    pub priced_as: &'static str,
}

/// Every class, in report order.
pub const CLASSES: &[ClassRow] = &[
    ClassRow {
        class: KernelClass::Weights,
        key: "weights",
        label: "weight GEMMs",
        categories: &["gemm", "moe"],
        priced_as: "linear, expert and lm_head weights over β (FLOPs over π where that binds)",
    },
    ClassRow {
        class: KernelClass::Attention,
        key: "attention",
        label: "attention",
        categories: &["attention"],
        priced_as: "the KV cache read over β (attention FLOPs over π where that binds)",
    },
    ClassRow {
        class: KernelClass::KvWrite,
        key: "kv_write",
        label: "KV-cache writes",
        categories: &["kv_cache"],
        priced_as: "the new tokens' K and V over β",
    },
    ClassRow {
        class: KernelClass::Communication,
        key: "communication",
        label: "communication",
        categories: &["communication"],
        priced_as: "the tensor-parallel all-reduces over the cited interconnect",
    },
    ClassRow {
        class: KernelClass::Quantize,
        key: "quantize",
        label: "quantize",
        categories: &["quantize"],
        priced_as: "no compulsory bytes: activation (de)quantization is not in the byte model, \
                    which prices weights and KV in their stored dtype; its floor is 0 and all \
                    its time is excess, like the rest's elementwise kernels",
    },
    ClassRow {
        class: KernelClass::Rest,
        key: "rest",
        label: "rest",
        categories: &[
            "norm",
            "activation",
            "rope",
            "sampling",
            "elementwise",
            "memory",
            "moe_routing",
        ],
        priced_as: "the 2-byte norm, bias and router weights over β",
    },
    #[cfg(test)]
    ClassRow {
        class: KernelClass::Probe,
        key: "probe",
        label: "probe",
        categories: &["probe_test"],
        priced_as: "test builds only: a fixed byte count over β",
    },
];

impl KernelClass {
    /// How many classes there are: the size of every class-indexed array.
    pub const COUNT: usize = CLASSES.len();

    /// Every class, in table order.
    pub const ALL: [KernelClass; KernelClass::COUNT] = {
        let mut all = [KernelClass::Rest; KernelClass::COUNT];
        let mut i = 0;
        while i < KernelClass::COUNT {
            all[i] = CLASSES[i].class;
            i += 1;
        }
        all
    };

    /// This class's row of [`CLASSES`].
    pub fn row(self) -> &'static ClassRow {
        &CLASSES[self as usize]
    }

    /// The JSON value (`weights`, `kv_write`, …), for column names.
    pub fn key(self) -> &'static str {
        self.row().key
    }

    pub fn as_str(self) -> &'static str {
        self.row().label
    }

    /// The class of a built-in category; None for `other` and categories stepgate does
    /// not know.
    pub(crate) fn of_category(category: &str) -> Option<KernelClass> {
        CLASSES
            .iter()
            .find(|r| r.categories.contains(&category))
            .map(|r| r.class)
    }
}

// One row per variant, in variant order (a variant without a row fails the unit test
// below that reads the enum's own schema).
const _: () = {
    assert!(CLASSES.len() == KernelClass::COUNT);
    let mut i = 0;
    while i < CLASSES.len() {
        assert!(CLASSES[i].class as usize == i);
        i += 1;
    }
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_row_and_its_key_is_its_json_value() {
        // The variants as the enum's own schema lists them (serde's names, in order): each
        // has the row of its index, whose key is that name.
        let schema = serde_json::to_value(schemars::schema_for!(KernelClass)).unwrap();
        let names: Vec<&str> = schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["const"].as_str().unwrap())
            .collect();
        let keys: Vec<&str> = CLASSES.iter().map(|r| r.key).collect();
        assert_eq!(names, keys);
        for r in CLASSES {
            assert_eq!(serde_json::to_value(r.class).unwrap(), r.key);
            assert_eq!(KernelClass::ALL[r.class as usize], r.class);
        }
        // The test build's throwaway class is the last row.
        assert_eq!(KernelClass::ALL.last(), Some(&KernelClass::Probe));
        assert_eq!(
            KernelClass::of_category("probe_test"),
            Some(KernelClass::Probe)
        );
    }
}
