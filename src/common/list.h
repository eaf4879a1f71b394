/* SPDX-License-Identifier: MIT */
/*
 * Intrusive doubly linked lists: the link lives in the item (a ListLink
 * member), so putting an item on a list or taking it off allocates nothing
 * and removal from the middle is O(1). The list knows its head and tail; a
 * link that is on no list has both pointers NULL.
 *
 * Used by the sync objects' wait queues and the loop pool's list of roots.
 * LIST_ITEM() gets the item back from its link. The engine's ready queue
 * keeps the same links by hand (Flow.rq_next): through this header the
 * dispatcher cost 1 % more instructions on the parallel workloads.
 */
#ifndef FUTOIN_LIST_H
#define FUTOIN_LIST_H

#include <stddef.h>

typedef struct ListLink {
    struct ListLink* next;
    struct ListLink* prev;
} ListLink;

typedef struct List {
    ListLink* head;
    ListLink* tail;
} List;

/* The item of type `type` whose member `member` is the link. */
#define LIST_ITEM(link, type, member) ((type*)(void*)((char*)(link) - offsetof(type, member)))

static inline void list_push_back(List* l, ListLink* n)
{
    n->next = NULL;
    n->prev = l->tail;
    if (l->tail) {
        l->tail->next = n;
    } else {
        l->head = n;
    }
    l->tail = n;
}

static inline void list_push_front(List* l, ListLink* n)
{
    n->prev = NULL;
    n->next = l->head;
    if (l->head) {
        l->head->prev = n;
    } else {
        l->tail = n;
    }
    l->head = n;
}

/* n must be on l. */
static inline void list_remove(List* l, ListLink* n)
{
    if (n->prev) {
        n->prev->next = n->next;
    } else {
        l->head = n->next;
    }
    if (n->next) {
        n->next->prev = n->prev;
    } else {
        l->tail = n->prev;
    }
    n->next = n->prev = NULL;
}

/* The head, taken off; l must not be empty. */
static inline ListLink* list_pop_front(List* l)
{
    ListLink* n = l->head;
    l->head = n->next;
    if (n->next) {
        n->next->prev = NULL;
        n->next = NULL;
    } else {
        l->tail = NULL;
    }
    return n;
}

#endif
