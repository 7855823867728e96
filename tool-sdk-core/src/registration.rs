//! What `#[tool]` submits to the global registry (collected with `inventory`, read by
//! tool-sdk's `ToolRegistry`).

use std::sync::Arc;

use crate::__private::{SpecTool, ToolSpec};
use crate::Tool;

/// A `#[tool]`'s entry in the global registry. Generated code builds these; apps do not.
#[doc(hidden)]
pub struct ToolRegistration {
    name: &'static str,
    path: &'static str,
    file: &'static str,
    line: u32,
    make: Make,
}

/// How a registration makes its tool.
enum Make {
    /// A hand-written tool's constructor.
    Fn(fn() -> Arc<dyn Tool>),
    /// A `#[tool]`'s table, made into the one `Tool` impl every `#[tool]` shares.
    Spec(&'static ToolSpec),
}

impl ToolRegistration {
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        path: &'static str,
        file: &'static str,
        line: u32,
        make: fn() -> Arc<dyn Tool>,
    ) -> Self {
        ToolRegistration {
            name,
            path,
            file,
            line,
            make: Make::Fn(make),
        }
    }

    /// The registration of a `#[tool]`: its table.
    #[doc(hidden)]
    pub const fn from_spec(
        name: &'static str,
        path: &'static str,
        file: &'static str,
        line: u32,
        spec: &'static ToolSpec,
    ) -> Self {
        ToolRegistration {
            name,
            path,
            file,
            line,
            make: Make::Spec(spec),
        }
    }

    /// The tool's name, as `#[tool]` saw it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Where the tool was defined: `module::path::fn (file.rs:line)`.
    pub fn defined_at(&self) -> String {
        format!("{} ({}:{})", self.path, self.file, self.line)
    }

    /// A new instance of the tool.
    pub fn make(&self) -> Arc<dyn Tool> {
        match self.make {
            Make::Fn(make) => make(),
            Make::Spec(spec) => Arc::new(SpecTool(spec)),
        }
    }

    /// Every registration linked into this program, in no particular order.
    pub fn all() -> impl Iterator<Item = &'static ToolRegistration> {
        inventory::iter::<ToolRegistration>.into_iter()
    }
}

inventory::collect!(ToolRegistration);
