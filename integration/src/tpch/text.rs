//! The generator's building blocks: a seeded random stream (SplitMix64,
//! our own: no dependency, the same numbers on every platform), the
//! spec's word lists, its text pool of sentences from those words, dates
//! as days, and money as cents.

/// A seeded random stream (SplitMix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed` and `stream` (one per table, so a table's rows
    /// do not depend on how many numbers another table drew).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1) as u64;
        lo + (self.next_u64() % span) as i64
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.int(0, items.len() as i64 - 1) as usize]
    }

    /// Random characters from the spec's alphanumeric set, `lo..=hi` long
    /// (addresses).
    pub fn vstring(&mut self, lo: i64, hi: i64) -> String {
        const CHARS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,. ";
        let len = self.int(lo, hi);
        (0..len)
            .map(|_| CHARS[self.int(0, CHARS.len() as i64 - 1) as usize] as char)
            .collect()
    }

    /// A phone number of nation `nation` (country code `nation + 10`).
    pub fn phone(&mut self, nation: i64) -> String {
        format!(
            "{}-{}-{}-{}",
            nation + 10,
            self.int(100, 999),
            self.int(100, 999),
            self.int(1000, 9999)
        )
    }
}

/// The 92 words part names are made of (clause 4.2.3, P_NAME).
pub const COLORS: &[&str] = &[
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "burnished",
    "chartreuse",
    "chiffon",
    "chocolate",
    "coral",
    "cornflower",
    "cornsilk",
    "cream",
    "cyan",
    "dark",
    "deep",
    "dim",
    "dodger",
    "drab",
    "firebrick",
    "floral",
    "forest",
    "frosted",
    "gainsboro",
    "ghost",
    "goldenrod",
    "green",
    "grey",
    "honeydew",
    "hot",
    "indian",
    "ivory",
    "khaki",
    "lace",
    "lavender",
    "lawn",
    "lemon",
    "light",
    "lime",
    "linen",
    "magenta",
    "maroon",
    "medium",
    "metallic",
    "midnight",
    "mint",
    "misty",
    "moccasin",
    "navajo",
    "navy",
    "olive",
    "orange",
    "orchid",
    "pale",
    "papaya",
    "peach",
    "peru",
    "pink",
    "plum",
    "powder",
    "puff",
    "purple",
    "red",
    "rose",
    "rosy",
    "royal",
    "saddle",
    "salmon",
    "sandy",
    "seashell",
    "sienna",
    "sky",
    "slate",
    "smoke",
    "snow",
    "spring",
    "steel",
    "tan",
    "thistle",
    "tomato",
    "turquoise",
    "violet",
    "wheat",
    "white",
    "yellow",
];

pub const TYPE_1: &[&str] = &["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
pub const TYPE_2: &[&str] = &["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
pub const TYPE_3: &[&str] = &["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
pub const CONTAINER_1: &[&str] = &["SM", "LG", "MED", "JUMBO", "WRAP"];
pub const CONTAINER_2: &[&str] = &["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
pub const SEGMENTS: &[&str] = &[
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
pub const PRIORITIES: &[&str] = &["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
pub const INSTRUCTIONS: &[&str] = &[
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
pub const MODES: &[&str] = &["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];

/// The 25 nations: (key, name, region key).
pub const NATIONS: &[(i64, &str, i64)] = &[
    (0, "ALGERIA", 0),
    (1, "ARGENTINA", 1),
    (2, "BRAZIL", 1),
    (3, "CANADA", 1),
    (4, "EGYPT", 4),
    (5, "ETHIOPIA", 0),
    (6, "FRANCE", 3),
    (7, "GERMANY", 3),
    (8, "INDIA", 2),
    (9, "INDONESIA", 2),
    (10, "IRAN", 4),
    (11, "IRAQ", 4),
    (12, "JAPAN", 2),
    (13, "JORDAN", 4),
    (14, "KENYA", 0),
    (15, "MOROCCO", 0),
    (16, "MOZAMBIQUE", 0),
    (17, "PERU", 1),
    (18, "CHINA", 2),
    (19, "ROMANIA", 3),
    (20, "SAUDI ARABIA", 4),
    (21, "VIETNAM", 2),
    (22, "RUSSIA", 3),
    (23, "UNITED KINGDOM", 3),
    (24, "UNITED STATES", 1),
];

pub const REGIONS: &[&str] = &["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

const NOUNS: &[&str] = &[
    "packages",
    "requests",
    "accounts",
    "deposits",
    "foxes",
    "ideas",
    "theodolites",
    "pinto beans",
    "instructions",
    "dependencies",
    "excuses",
    "platelets",
    "asymptotes",
    "courts",
    "dolphins",
    "multipliers",
    "sauternes",
    "warthogs",
    "frets",
    "dinos",
    "attainments",
    "somas",
    "patterns",
    "forges",
    "braids",
    "frays",
    "warhorses",
    "dugouts",
    "epitaphs",
    "pearls",
    "tithes",
    "waters",
    "orbits",
    "gifts",
    "sheaves",
    "depths",
    "sentiments",
    "decoys",
    "realms",
    "pains",
];
const VERBS: &[&str] = &[
    "sleep",
    "wake",
    "are",
    "cajole",
    "haggle",
    "nag",
    "use",
    "boost",
    "affix",
    "detect",
    "integrate",
    "maintain",
    "nod",
    "was",
    "lose",
    "sublate",
    "solve",
    "thrash",
    "promise",
    "engage",
    "hinder",
    "print",
    "x-ray",
    "breach",
    "eat",
    "grow",
    "impress",
    "mold",
    "poach",
    "serve",
    "run",
    "dazzle",
    "snooze",
    "doze",
    "unwind",
    "kindle",
    "play",
    "hang",
    "believe",
];
const ADJECTIVES: &[&str] = &[
    "special",
    "pending",
    "unusual",
    "express",
    "furious",
    "sly",
    "careful",
    "blithe",
    "quick",
    "fluffy",
    "slow",
    "quiet",
    "ruthless",
    "thin",
    "close",
    "dogged",
    "daring",
    "brave",
    "stealthy",
    "permanent",
    "enticing",
    "idle",
    "busy",
    "regular",
    "final",
    "ironic",
    "even",
    "bold",
    "silent",
];
const ADVERBS: &[&str] = &[
    "sometimes",
    "always",
    "never",
    "furiously",
    "slyly",
    "carefully",
    "blithely",
    "quickly",
    "fluffily",
    "slowly",
    "quietly",
    "ruthlessly",
    "thinly",
    "closely",
    "doggedly",
    "daringly",
    "bravely",
    "stealthily",
    "permanently",
    "enticingly",
    "idly",
    "busily",
    "regularly",
    "finally",
    "ironically",
    "evenly",
    "boldly",
    "silently",
];
const PREPOSITIONS: &[&str] = &[
    "about",
    "above",
    "according to",
    "across",
    "after",
    "against",
    "along",
    "among",
    "around",
    "at",
    "atop",
    "before",
    "behind",
    "beneath",
    "beside",
    "between",
    "beyond",
    "by",
    "during",
    "from",
    "inside",
    "into",
    "near",
    "of",
    "on",
    "outside",
    "over",
    "past",
    "since",
    "through",
    "to",
    "toward",
    "under",
    "until",
    "upon",
    "with",
    "within",
    "without",
];
const TERMINATORS: &[&str] = &[".", ";", ":", "?", "!", "--"];

/// The text comments are cut from: sentences of the spec's grammar's
/// shape (noun phrase, verb phrase, optional prepositional phrase,
/// terminator), about `len` bytes.
pub fn text_pool(rng: &mut Rng, len: usize) -> String {
    let mut pool = String::with_capacity(len + 100);
    while pool.len() < len {
        if rng.int(0, 1) == 0 {
            pool.push_str(rng.pick(ADJECTIVES));
            pool.push(' ');
        }
        pool.push_str(rng.pick(NOUNS));
        pool.push(' ');
        if rng.int(0, 2) == 0 {
            pool.push_str(rng.pick(ADVERBS));
            pool.push(' ');
        }
        pool.push_str(rng.pick(VERBS));
        if rng.int(0, 1) == 0 {
            pool.push(' ');
            pool.push_str(rng.pick(PREPOSITIONS));
            pool.push_str(" the ");
            pool.push_str(rng.pick(ADJECTIVES));
            pool.push(' ');
            pool.push_str(rng.pick(NOUNS));
        }
        pool.push_str(rng.pick(TERMINATORS));
        pool.push(' ');
    }
    pool
}

/// A comment: `lo..=hi` bytes from a random place of `pool` (ASCII), with
/// no space at either end.
pub fn comment(rng: &mut Rng, pool: &str, lo: i64, hi: i64) -> String {
    let len = rng.int(lo, hi) as usize;
    let start = rng.int(0, (pool.len() - len) as i64) as usize;
    pool[start..start + len].trim().to_owned()
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
pub const fn days(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` of days since 1970-01-01.
pub fn date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Cents as a `numeric(15,2)` literal.
pub fn money(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}
