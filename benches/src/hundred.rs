//! A hundred generated tools, for the start-up (schema generation) benchmark.

use std::sync::Arc;

use tool_sdk::{Tool, tool};

macro_rules! hundred {
    ($($name:ident $tool:ident),* $(,)?) => {
        $(
            /// Looks something up: one of a hundred generated tools.
            #[tool(read_only, register = false)]
            pub async fn $name(
                /// The path to look at.
                path: String,
                /// How many entries at most.
                count: Option<u32>,
                /// Where to start.
                #[arg(default = 10)]
                limit: u64,
                /// Whether to recurse.
                recursive: bool,
                /// Extra tags.
                tags: Vec<String>,
            ) -> String {
                format!("{path} {count:?} {limit} {recursive} {}", tags.len())
            }
        )*

        /// The hundred tools, freshly made.
        pub fn all() -> Vec<Arc<dyn Tool>> {
            vec![$(Arc::new($tool)),*]
        }
    };
}

hundred! {
    t000 T000Tool,
    t001 T001Tool,
    t002 T002Tool,
    t003 T003Tool,
    t004 T004Tool,
    t005 T005Tool,
    t006 T006Tool,
    t007 T007Tool,
    t008 T008Tool,
    t009 T009Tool,
    t010 T010Tool,
    t011 T011Tool,
    t012 T012Tool,
    t013 T013Tool,
    t014 T014Tool,
    t015 T015Tool,
    t016 T016Tool,
    t017 T017Tool,
    t018 T018Tool,
    t019 T019Tool,
    t020 T020Tool,
    t021 T021Tool,
    t022 T022Tool,
    t023 T023Tool,
    t024 T024Tool,
    t025 T025Tool,
    t026 T026Tool,
    t027 T027Tool,
    t028 T028Tool,
    t029 T029Tool,
    t030 T030Tool,
    t031 T031Tool,
    t032 T032Tool,
    t033 T033Tool,
    t034 T034Tool,
    t035 T035Tool,
    t036 T036Tool,
    t037 T037Tool,
    t038 T038Tool,
    t039 T039Tool,
    t040 T040Tool,
    t041 T041Tool,
    t042 T042Tool,
    t043 T043Tool,
    t044 T044Tool,
    t045 T045Tool,
    t046 T046Tool,
    t047 T047Tool,
    t048 T048Tool,
    t049 T049Tool,
    t050 T050Tool,
    t051 T051Tool,
    t052 T052Tool,
    t053 T053Tool,
    t054 T054Tool,
    t055 T055Tool,
    t056 T056Tool,
    t057 T057Tool,
    t058 T058Tool,
    t059 T059Tool,
    t060 T060Tool,
    t061 T061Tool,
    t062 T062Tool,
    t063 T063Tool,
    t064 T064Tool,
    t065 T065Tool,
    t066 T066Tool,
    t067 T067Tool,
    t068 T068Tool,
    t069 T069Tool,
    t070 T070Tool,
    t071 T071Tool,
    t072 T072Tool,
    t073 T073Tool,
    t074 T074Tool,
    t075 T075Tool,
    t076 T076Tool,
    t077 T077Tool,
    t078 T078Tool,
    t079 T079Tool,
    t080 T080Tool,
    t081 T081Tool,
    t082 T082Tool,
    t083 T083Tool,
    t084 T084Tool,
    t085 T085Tool,
    t086 T086Tool,
    t087 T087Tool,
    t088 T088Tool,
    t089 T089Tool,
    t090 T090Tool,
    t091 T091Tool,
    t092 T092Tool,
    t093 T093Tool,
    t094 T094Tool,
    t095 T095Tool,
    t096 T096Tool,
    t097 T097Tool,
    t098 T098Tool,
    t099 T099Tool
}
