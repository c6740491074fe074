-- POST /users with a unique email per request (no password: argon2 would be all we measured).
local counter = 0
local run = tostring(os.time()) .. tostring(math.random(100000, 999999))
request = function()
  counter = counter + 1
  local body = string.format('{"name":"Bench User %d","email":"bench-%s-%d@example.com"}', counter, run, counter)
  return wrk.format("POST", "/users", { ["Content-Type"] = "application/json" }, body)
end
