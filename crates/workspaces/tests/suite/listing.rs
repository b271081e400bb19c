//! The listing: open workspaces with their git state, and the row a session's folder is in.
