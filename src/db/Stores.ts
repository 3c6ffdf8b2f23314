import { Layer } from "effect"
import { DeliveryStore } from "./DeliveryStore.js"
import { HostStore } from "./HostStore.js"
import { MessageStore } from "./MessageStore.js"
import { PlaceOwnerStore } from "./PlaceOwnerStore.js"
import { TaskStore } from "./TaskStore.js"
import { TurnStore } from "./TurnStore.js"
import { WorkspaceStore } from "./WorkspaceStore.js"

/** Every store over one SqlClient; they hold no resources, so merging them is order-free. */
export const layer = Layer.mergeAll(MessageStore.layer, TurnStore.layer, DeliveryStore.layer, WorkspaceStore.layer, HostStore.layer, TaskStore.layer, PlaceOwnerStore.layer)
