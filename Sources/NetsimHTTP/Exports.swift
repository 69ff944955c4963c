// The built-in server answers from the route vocabulary (HTTPRoute, RouteTable, …), which lives
// apart so that scenario parsing needs no NIO.
@_exported import NetsimRoutes
