use tool_sdk::tool;

/// Reads a file.
#[tool(name = "read file")]
async fn read(file_path: String) -> String {
    file_path
}

/// Way too long a name.
#[tool(name = "a_name_that_goes_on_and_on_and_on_well_past_the_limit_of_sixty_four")]
async fn long(file_path: String) -> String {
    file_path
}

fn main() {}
