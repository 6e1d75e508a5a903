//! The six ways the policy can judge a resource's annotation keys.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Criterion {
    ContainsAnyOf,
    DoesNotContainAnyOf,
    ContainsAllOf,
    DoesNotContainAllOf,
    ContainsOtherThan,
    DoesNotContainOtherThan,
}

impl Criterion {
    pub const ALL: [Criterion; 6] = [
        Criterion::ContainsAnyOf,
        Criterion::DoesNotContainAnyOf,
        Criterion::ContainsAllOf,
        Criterion::DoesNotContainAllOf,
        Criterion::ContainsOtherThan,
        Criterion::DoesNotContainOtherThan,
    ];

    /// The camelCase spelling used in settings and documentation.
    pub fn name(self) -> &'static str {
        match self {
            Criterion::ContainsAnyOf => "containsAnyOf",
            Criterion::DoesNotContainAnyOf => "doesNotContainAnyOf",
            Criterion::ContainsAllOf => "containsAllOf",
            Criterion::DoesNotContainAllOf => "doesNotContainAllOf",
            Criterion::ContainsOtherThan => "containsOtherThan",
            Criterion::DoesNotContainOtherThan => "doesNotContainOtherThan",
        }
    }

    /// Accepts the camelCase name and its PascalCase spelling: the upstream
    /// documentation shows both, and users copy either.
    pub fn from_name(name: &str) -> Option<Criterion> {
        Criterion::ALL.into_iter().find(|c| {
            let (given, canonical) = (name.as_bytes(), c.name().as_bytes());
            given.len() == canonical.len()
                && given[1..] == canonical[1..]
                && given[0].eq_ignore_ascii_case(&canonical[0])
        })
    }
}

impl fmt::Display for Criterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_and_pascal_case_spellings_are_accepted() {
        for criterion in Criterion::ALL {
            let camel = criterion.name();
            let pascal = format!("{}{}", camel[..1].to_ascii_uppercase(), &camel[1..]);
            assert_eq!(Criterion::from_name(camel), Some(criterion), "{camel}");
            assert_eq!(Criterion::from_name(&pascal), Some(criterion), "{pascal}");
        }
    }

    /// Every test and fuzz target draws the criteria from `ALL`: a variant
    /// left out of it would go untested. The enum's own text says which
    /// variants there are.
    #[test]
    fn all_holds_every_variant_in_order() {
        let variants =
            crate::test_support::declared_variants(include_str!("criterion.rs"), "Criterion");
        let all: Vec<String> = Criterion::ALL.iter().map(|c| format!("{c:?}")).collect();
        assert_eq!(variants, all);
    }

    #[test]
    fn other_spellings_are_refused() {
        for name in [
            "",
            "c",
            "containsanyof",
            "CONTAINSANYOF",
            "containsAnyof",
            "contains_any_of",
            " containsAnyOf",
            "containsAnyOf ",
            "éontainsAnyOf",
            // same byte length as "containsAnyOf", with a two-byte first character
            "éontainsAnyO",
        ] {
            assert_eq!(Criterion::from_name(name), None, "{name:?}");
        }
    }
}
