-- PATCH /users/{random id} over the seeded ids: a new name each time (a real change).
local max_id = tonumber(os.getenv("SEEDED") or "10000")
local counter = 0
math.randomseed(os.time())
request = function()
  counter = counter + 1
  local body = string.format('{"name":"Renamed %d"}', counter)
  return wrk.format("PATCH", "/users/" .. math.random(1, max_id), { ["Content-Type"] = "application/json" }, body)
end
