-- Shared by the headless Neovim tests: failing checks, captured vim.notify
-- messages and bounded waits.  Loaded with dofile() by each test script.
local M = {}

-- Fail the run with a formatted message unless `ok`.
function M.check(ok, msg, ...)
  if not ok then
    error(string.format(msg, ...), 0)
  end
  return ok
end

-- vim.notify messages (the user commands report through it), split by level.
M.messages, M.errors = {}, {}
vim.notify = function(msg, level)
  table.insert(level == vim.log.levels.ERROR and M.errors or M.messages, msg)
end

-- Wait up to `timeout` ms for `pred`; with `fail_on_error`, an error message ends the wait and fails.
function M.wait_for(what, pred, timeout, fail_on_error)
  local ok = vim.wait(timeout, function()
    return (fail_on_error and #M.errors > 0) or pred()
  end, 20)
  if fail_on_error then
    M.check(#M.errors == 0, "error message while waiting for %s: %s", what, M.errors[1])
  end
  M.check(ok, "timed out waiting for %s", what)
end

return M
