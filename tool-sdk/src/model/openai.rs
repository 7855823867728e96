//! OpenAI Chat Completions client. (Being written.)
